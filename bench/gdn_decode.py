"""Serving side by side in one process (issue 29, item 6): decode (one token per
sequence), speculative verify (T draft tokens per sequence, every token's state
kept) and prefill into a state pool, each as a CUDA graph (bench/timing.py's
time_graph, median), for

  QLA        qla.gdn.recurrent over a V-first pool [slots, Hv, V, K] (f32 or bf16),
             the gate and beta computed in the kernel from the raw A_log, a, dt_bias,
             b (vLLM's fused gating), q/k L2 norm in the kernel, native GVA;
  FLA        fla.ops.gated_delta_rule.fused_recurrent_gated_delta_rule (Triton), g
             and beta computed by torch inside the same graph (as FLA's callers
             do), K-first f32 states of the batch, the final state only (so its
             verify line does less work than the others: no per-token states);
  FlashInfer flashinfer.gdn_decode's gated_delta_rule_decode_pretranspose
             (decode: V-first state of the batch, f32) and gated_delta_rule_mtp
             (verify: a pool and slot indices, every token's state to its
             intermediate buffer), packed by ../shared/anchors/pack_flashinfer.sh.

Each line also reports the fraction of the HBM bound it reaches: the bytes it
must move at least (q, k, v, o, a, b once; the state read once and written once
per kept state: decode 1, verify T) over --hbm-tbps (default 4.8, the H200's;
3.35 for an H100). A backend that cannot run a configuration (not installed, an
API it lacks, a state dtype it refuses) prints the reason and is left out of
that line. --check compares every backend's o and states with QLA's (rms
relative; they compute the same recurrence from the same inputs).

--prefill times the pool prefill (qla.gdn.prefill: the start states read from
and the final states written to the pool by the fused kernel) against gather +
qla.chunk_gated_delta_rule + scatter (what a stack does without it), varlen
batches of equal sequences.

    PYTHONPATH=python:.fla:/tmp/fisite:/tmp/fisite/nvidia_cutlass_dsl/dsl_packages \\
    QLA_LIBRARY=build/compiler/libqla.so FLA_FLASH_QLA=0 FLA_TILELANG=0 \\
        python3 bench/gdn_decode.py [--heads 16/32,16/64] [--batch 1,8,64,256,1024]
            [--state f32,bf16] [--verify-T 4] [--prefill] [--check] [--json OUT]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import time_eager, time_graph  # noqa: E402

K = V = 128


def rms_rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


class Inputs:
    """One configuration's raw serving inputs (vLLM's: a, b, A_log, dt_bias)."""

    def __init__(self, torch, N, T, Hqk, Hv, state_dtype, seed):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        rnd = lambda *s, dt=torch.float32: torch.randn(*s, generator=gen, device="cuda").to(dt)  # noqa: E731
        bf = torch.bfloat16
        self.N, self.T, self.Hqk, self.Hv = N, T, Hqk, Hv
        self.q, self.k, self.v = rnd(N, T, Hqk, K, dt=bf), rnd(N, T, Hqk, K, dt=bf), rnd(N, T, Hv, V, dt=bf)
        self.a, self.b = rnd(N, T, Hv, dt=bf), rnd(N, T, Hv, dt=bf)
        self.A_log = (torch.rand(Hv, generator=gen, device="cuda") * 2 - 3).float()  # decays near 1
        self.dt_bias = rnd(Hv) * 0.5
        # The start states, V-first [N, Hv, V, K], in the pool's dtype.
        self.s0 = (rnd(N, Hv, V, K) * 0.1).to(state_dtype)
        self.scale = K ** -0.5

    def gate(self, torch):
        F = torch.nn.functional
        g = -self.A_log.exp() * F.softplus(self.a.float() + self.dt_bias)
        return g, torch.sigmoid(self.b.float())


def hbm_bytes(x, kept_states, state_bytes):
    io = x.N * x.T * (2 * x.Hqk * K * 2 + x.Hv * V * 2 * 2 + x.Hv * 2 * 2)
    return io + x.N * x.Hv * K * V * state_bytes * (1 + kept_states)


# ---- QLA ---------------------------------------------------------------------

def qla_recurrent(torch, G, x, verify):
    """Decode: read and write slot n. Verify: read slot n, token t's state to
    slot N + n*T + t (each kept)."""
    N, T = x.N, x.T
    slots = N * (T + 1) if verify else N
    pool = torch.zeros(slots, x.Hv, V, K, dtype=x.s0.dtype, device="cuda")
    pool[:N] = x.s0
    ri = torch.arange(N, dtype=torch.int32, device="cuda")
    wi = (N + ri[:, None] * T + torch.arange(T, dtype=torch.int32, device="cuda")[None]) if verify \
        else ri[:, None]
    wi = wi.contiguous()
    out = torch.empty(N, T, x.Hv, V, dtype=torch.bfloat16, device="cuda")
    init = pool.clone()

    def call():
        G.recurrent(x.q, x.k, x.v, x.a, x.b, pool, ri, wi, scale=x.scale, use_qk_l2norm_in_kernel=True,
                    use_beta_sigmoid_in_kernel=True, use_gate_in_kernel=True, A_log=x.A_log, dt_bias=x.dt_bias,
                    out=out)

    def result():
        pool.copy_(init)
        call()
        torch.cuda.synchronize()
        states = pool[N:].view(N, T, x.Hv, V, K) if verify else pool[:N].view(N, 1, x.Hv, V, K)
        return out.clone(), states.float().clone()

    def reset():
        pool.copy_(init)

    return call, result, reset


# ---- FLA ---------------------------------------------------------------------

def fla_recurrent(torch, x):
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule as fr

    if x.s0.dtype != torch.float32:
        raise RuntimeError("FLA's fused_recurrent keeps f32 states here (no bf16 state in its signature)")
    h0 = x.s0.float().transpose(-1, -2).contiguous()  # K-first [N, Hv, K, V]
    res = {}

    def call():
        g, beta = x.gate(torch)
        o, ht = fr(x.q, x.k, x.v, g, beta, scale=x.scale, initial_state=h0, output_final_state=True,
                   use_qk_l2norm_in_kernel=True)
        res["o"], res["ht"] = o, ht

    def result():
        call()
        torch.cuda.synchronize()
        return res["o"].clone(), res["ht"].transpose(-1, -2)[:, None].float().clone()  # V-first, last state

    return call, result


# ---- FlashInfer --------------------------------------------------------------

def flashinfer_recurrent(torch, x, verify):
    from flashinfer import gdn_decode as fi

    N, T = x.N, x.T
    dtb = x.dt_bias.to(torch.bfloat16)
    out = torch.empty(N, T, x.Hv, V, dtype=torch.bfloat16, device="cuda")
    # GVA: its heads of q/k are the q/k heads (num_q_heads, num_k_heads < num_v_heads).
    if not verify:
        state = x.s0.clone()  # [N, Hv, V, K] (pretranspose: V-first)
        init = state.clone()

        def call():
            fi.gated_delta_rule_decode_pretranspose(x.q, x.k, x.v, state, x.A_log, x.a, dtb, x.b, x.scale, out, True)

        def result():
            state.copy_(init)
            call()
            torch.cuda.synchronize()
            return out.clone(), state[:, None].float().clone()

        def reset():
            state.copy_(init)
        return call, result, reset
    pool = x.s0.clone()
    idx = torch.arange(N, dtype=torch.int32, device="cuda")
    inter = torch.zeros(N, T, x.Hv, V, K, dtype=x.s0.dtype, device="cuda")

    def call():
        fi.gated_delta_rule_mtp(x.q, x.k, x.v, pool, idx, x.A_log, x.a, dtb, x.b, x.scale, out, inter,
                                disable_state_update=True, use_qk_l2norm=True)

    def result():
        call()
        torch.cuda.synchronize()
        return out.clone(), inter.float().clone()

    return call, result, lambda: None


def timed(call, reset=None, calls=20):
    """Median ms of one call, as a graph of `calls` calls (the pool updated in
    place each call: a decode loop's state stays bounded with the decays near
    1 and small inputs), the pool reset afterwards."""
    ms, _ = time_graph(call, calls=calls, replays=15)
    if reset:
        reset()
    return ms


def run_recurrent(torch, G, args, rows):
    impls = [s for s in ("qla", "fla", "flashinfer") if not getattr(args, "no_" + s, False)]
    for heads in args.heads.split(","):
        Hqk, Hv = (int(h) for h in heads.split("/"))
        for sd in args.state.split(","):
            sdt = {"f32": torch.float32, "bf16": torch.bfloat16}[sd]
            for mode, T in (("decode", 1), ("verify", args.verify_T)):
                if mode == "verify" and args.verify_T <= 1:
                    continue
                for N in (int(b) for b in args.batch.split(",")):
                    x = Inputs(torch, N, T, Hqk, Hv, sdt, seed=N * 131 + T)
                    line = dict(mode=mode, heads=heads, state=sd, N=N, T=T)
                    kept = T if mode == "verify" else 1
                    bound_us = hbm_bytes(x, kept, 4 if sd == "f32" else 2) / (args.hbm_tbps * 1e12) * 1e6
                    line["hbm_bound_us"] = bound_us
                    ref = None
                    for impl in impls:
                        try:
                            if impl == "qla":
                                call, result, reset = qla_recurrent(torch, G, x, mode == "verify")
                            elif impl == "fla":
                                call, result = fla_recurrent(torch, x)
                                reset = None
                            else:
                                call, result, reset = flashinfer_recurrent(torch, x, mode == "verify")
                            if args.check:
                                o, s = result()
                                if impl == "qla":
                                    ref = (o, s)
                                elif ref is not None:
                                    # FLA keeps the last state only: compare it with QLA's last.
                                    line[impl + "_o_err"] = rms_rel(o, ref[0])
                                    line[impl + "_state_err"] = rms_rel(s[:, -1], ref[1][:, -1])
                            us = timed(call, reset) * 1e3
                            line[impl + "_us"] = us
                            line[impl + "_of_bound"] = bound_us / us
                        except Exception as e:  # noqa: BLE001 - a backend's failure is reported, not fatal
                            line[impl + "_skip"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
                    rows.append(line)
                    cells = []
                    for impl in impls:
                        if impl + "_us" in line:
                            c = f"{impl} {line[impl + '_us']:8.1f} us ({line[impl + '_of_bound']:4.0%})"
                            if impl + "_o_err" in line:
                                c += f" o {line[impl + '_o_err']:.1e} s {line[impl + '_state_err']:.1e}"
                            cells.append(c)
                        else:
                            cells.append(f"{impl} -")
                    print(f"{mode:6s} {heads:5s} {sd:4s} N={N:5d} T={T:2d} bound {bound_us:7.1f} us | "
                          + " | ".join(cells), flush=True)
                    for impl in impls:
                        if impl + "_skip" in line and N == int(args.batch.split(",")[0]):
                            print(f"    {impl} skipped: {line[impl + '_skip']}")


def run_prefill(torch, qla, G, args, rows):
    """Pool prefill against gather + prefill + scatter (16/32 heads, f32 pool)."""
    Hqk, Hv = 16, 32
    for nseq, L in ((8, 1024), (32, 512), (4, 8192)):
        T = nseq * L
        gen = torch.Generator(device="cuda").manual_seed(T)
        rnd = lambda *s, dt=torch.float32: torch.randn(*s, generator=gen, device="cuda").to(dt)  # noqa: E731
        q, k = rnd(1, T, Hqk, K, dt=torch.bfloat16), rnd(1, T, Hqk, K, dt=torch.bfloat16)
        v = rnd(1, T, Hv, V, dt=torch.bfloat16)
        g = torch.nn.functional.logsigmoid(rnd(1, T, Hv)) * 0.1
        beta = torch.sigmoid(rnd(1, T, Hv))
        cu = torch.arange(0, T + 1, L, dtype=torch.int32, device="cuda")
        cu_cpu = cu.cpu()
        slots = 4 * nseq
        pool = rnd(slots, Hv, V, K) * 0.1
        idx = torch.randperm(slots, generator=gen, device="cuda")[:nseq].to(torch.int32)
        out = torch.empty(1, T, Hv, V, dtype=torch.bfloat16, device="cuda")
        init = pool.clone()

        def pooled():
            G.prefill(q, k, v, g, beta, pool, initial_slots=idx, final_slots=idx, cu_seqlens=cu,
                      cu_seqlens_cpu=cu_cpu, use_qk_l2norm_in_kernel=True, out=out)

        def gathered():
            h0 = pool[idx.long()].transpose(-1, -2).contiguous()  # K-first
            o, ht = qla.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                               cu_seqlens=cu, use_qk_l2norm_in_kernel=True)
            pool[idx.long()] = ht.transpose(-1, -2)
            out.copy_(o)

        line = dict(mode="prefill", heads="16/32", N=nseq, L=L)
        for name, fn in (("pool", pooled), ("gather_scatter", gathered)):
            try:
                line[name + "_ms"] = timed(fn, None, calls=5)
            except Exception as e:  # noqa: BLE001 - e.g. a host copy that a graph cannot capture
                try:
                    line[name + "_ms"], _ = time_eager(fn, calls=5)
                    line[name + "_eager"] = f"timed eagerly: {type(e).__name__}"
                except Exception as e2:  # noqa: BLE001
                    line[name + "_skip"] = f"{type(e2).__name__}: {str(e2).splitlines()[0][:120]}"
            pool.copy_(init)
        rows.append(line)
        if "pool_ms" in line and "gather_scatter_ms" in line:
            print(f"prefill 16/32 {nseq:3d} x {L:5d}: pool {line['pool_ms']:.3f} ms, gather + prefill + scatter "
                  f"{line['gather_scatter_ms']:.3f} ms ({line['gather_scatter_ms'] / line['pool_ms']:.2f}x)")
        else:
            print(f"prefill 16/32 {nseq} x {L}: {line}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heads", default="16/32,16/64", help="Hqk/Hv pairs, comma-separated")
    ap.add_argument("--batch", default="1,4,16,64,256,1024", help="sequences per call")
    ap.add_argument("--state", default="f32,bf16", help="pool dtypes")
    ap.add_argument("--verify-T", type=int, default=4, help="draft tokens per sequence (1: no verify lines)")
    ap.add_argument("--hbm-tbps", type=float, default=4.8)
    ap.add_argument("--no-qla", action="store_true")
    ap.add_argument("--no-fla", action="store_true")
    ap.add_argument("--no-flashinfer", action="store_true")
    ap.add_argument("--check", action="store_true", help="compare every backend's o and states with QLA's")
    ap.add_argument("--prefill", action="store_true", help="also pool prefill against gather + prefill + scatter")
    ap.add_argument("--json", help="write every line here")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIP: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("SKIP: no GPU")
        return 0
    import qla
    from qla import gdn as G

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, K = V = {K}, bf16 q/k/v, "
          f"HBM bound at {args.hbm_tbps} TB/s", flush=True)
    rows = []
    run_recurrent(torch, G, args, rows)
    if args.prefill:
        run_prefill(torch, qla, G, args, rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
