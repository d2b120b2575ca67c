"""GPU conformance suite of the simple-GLA forward, qla.chunk_simple_gla
(kernels/gla/gla_fwd.qla; same contract as FLA's chunk_simple_gla forward).

It passed on the H200 (docs/tutorial.md, "GPU results"); without a GPU the
same kernel runs on QLA's CPU simulator (ctest gla_sim).

Every run draws fresh random inputs (the seed comes from the clock and is
printed; --seed reproduces a run) and compares o and the final state with a
float64 reference computed with PyTorch on the GPU: the chunked form of the
recurrence (docs/tutorial.md §2), itself checked against the token-by-token
recurrence S_t = e^{g_t} S_{t-1} + k_t v_tᵀ, o_t = scale S_tᵀ q_t at the start.
Metric: rms(out - ref) / rms(ref), bar 0.005 for each (the GDN bar). Outputs
must hold no NaN/Inf; the caching allocator is seeded with NaN-filled blocks
of the output sizes before each call, so an output element the operator
never writes is likely to show up as NaN. Bad inputs must raise QlaError.

Sizes (GDN.md's grid): T in {1, 63, 64, 65, 333, 1000, 4096}, varlen lengths
like [1, 15, 64, 100, 411, 1500] (with empty sequences), K, V in {64, 128},
heads 1..16 (and GVA groups), bf16 and f16, with and without initial and
final states, i32 and i64 offsets, and a CUDA-graph replay.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 test/gpu/test_gla.py
        [--seed N] [--filter SUBSTR] [--no-large] [--no-graph] [--verbose]

Prints SKIP and exits 0 without PyTorch or a GPU; otherwise prints a table and
"N passed, M failed", exit status 1 on any failure.
"""
import argparse
import math
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAR = 0.005
SELF_CHECK_BAR = 1e-10
CHUNK = 64

torch = None


# ----------------------------------------------------------------------------
# float64 references (GPU)
# ----------------------------------------------------------------------------

def _sequences(B, T, cu):
    if cu is None:
        return [(b, 0, T) for b in range(B)]
    c = [int(x) for x in cu.tolist()]
    return [(0, c[i], c[i + 1]) for i in range(len(c) - 1)]


def _expand(q, H):
    """q/k heads expanded to the v-heads (v-head j reads q/k head j // group)."""
    group = H // q.shape[2]
    return q.double().repeat_interleave(group, dim=2) if group > 1 else q.double()


def recurrent_ref(q, k, v, g, scale, h0, cu):
    """Token by token, float64: (o [B, T, H, V], ht [N, H, K, V])."""
    B, T, H, V = v.shape
    K = q.shape[-1]
    q64, k64, v64, g64 = _expand(q, H), _expand(k, H), v.double(), g.double()
    seqs = _sequences(B, T, cu)
    o = torch.zeros(B, T, H, V, dtype=torch.float64, device=v.device)
    ht = torch.zeros(len(seqs), H, K, V, dtype=torch.float64, device=v.device)
    for n, (b, bos, eos) in enumerate(seqs):
        S = h0[n].double().clone() if h0 is not None else torch.zeros(H, K, V, dtype=torch.float64, device=v.device)
        for t in range(bos, eos):
            S = torch.exp(g64[b, t])[:, None, None] * S + k64[b, t][:, :, None] * v64[b, t][:, None, :]
            o[b, t] = scale * torch.einsum("hk,hkv->hv", q64[b, t], S)
        ht[n] = S
    return o, ht


def chunked_ref(q, k, v, g, scale, h0, cu, C=CHUNK):
    """The kernel's chunked form in float64, all heads at once per chunk."""
    B, T, H, V = v.shape
    K = q.shape[-1]
    q64, k64, v64, g64 = _expand(q, H), _expand(k, H), v.double(), g.double()
    seqs = _sequences(B, T, cu)
    o = torch.zeros(B, T, H, V, dtype=torch.float64, device=v.device)
    ht = torch.zeros(len(seqs), H, K, V, dtype=torch.float64, device=v.device)
    for n, (b, bos, eos) in enumerate(seqs):
        S = h0[n].double().clone() if h0 is not None else torch.zeros(H, K, V, dtype=torch.float64, device=v.device)
        for t0 in range(bos, eos, C):
            t1 = min(t0 + C, eos)
            Qc = q64[b, t0:t1].transpose(0, 1)   # [H, L, K]
            Kc = k64[b, t0:t1].transpose(0, 1)
            Vc = v64[b, t0:t1].transpose(0, 1)   # [H, L, V]
            gam = torch.cumsum(g64[b, t0:t1].transpose(0, 1), dim=1)  # [H, L]
            gl = gam[:, -1]
            L = t1 - t0
            mask = torch.tril(torch.ones(L, L, dtype=torch.bool, device=v.device))
            Gam = torch.exp(gam[:, :, None] - gam[:, None, :]).masked_fill(~mask, 0.0)
            P = Gam * (Qc @ Kc.transpose(1, 2))
            Oc = torch.exp(gam)[:, :, None] * (Qc @ S) + P @ Vc
            o[b, t0:t1] = (scale * Oc).transpose(0, 1)
            S = torch.exp(gl)[:, None, None] * S + Kc.transpose(1, 2) @ (torch.exp(gl[:, None] - gam)[:, :, None] * Vc)
        ht[n] = S
    return o, ht


def rms_rel(x, ref):
    x, ref = x.double(), ref.double()
    den = ref.pow(2).mean().sqrt().item()
    num = (x - ref).pow(2).mean().sqrt().item()
    return num / den if den > 0 else num


# ----------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------

DTYPES = {}


def make_inputs(case, gen):
    dt = DTYPES[case.get("dtype", "bf16")]
    lens = case.get("lens")
    Hqk, H, K, V = case["Hqk"], case["H"], case["K"], case["V"]
    if lens is not None:
        B, T = 1, sum(lens)
        cu = torch.tensor([0] + list(itertools_accumulate(lens)), device="cuda",
                          dtype=torch.int64 if case.get("cu_dtype") == "i64" else torch.int32)
        N = len(lens)
    else:
        B, T, cu, N = case["B"], case["T"], None, case["B"]

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device="cuda", dtype=torch.float32)

    q = randn(B, T, Hqk, K).to(dt)
    k = (randn(B, T, Hqk, K) / math.sqrt(K)).to(dt)
    v = randn(B, T, H, V).to(dt)
    # log-sigmoid gates as FLA's tests draw them (per token and head, <= 0).
    g = torch.nn.functional.logsigmoid(randn(B, T, H) + case.get("gate_bias", 2.0))
    h0 = randn(N, H, K, V) if case.get("h0") else None
    return dict(q=q, k=k, v=v, g=g.contiguous(), initial_state=h0, cu_seqlens=cu, B=B, T=T, N=N)


def itertools_accumulate(xs):
    s = 0
    for x in xs:
        s += x
        yield s


def poison_allocator(*nbytes):
    blocks = [torch.full(((n + 3) // 4,), float("nan"), dtype=torch.float32, device="cuda") for n in nbytes if n > 0]
    torch.cuda.synchronize()
    del blocks


# ----------------------------------------------------------------------------
# cases
# ----------------------------------------------------------------------------

def cases(large):
    out = []
    for T in (1, 63, 64, 65, 333, 1000) + ((4096,) if large else ()):
        out.append(dict(B=2, T=T, Hqk=4, H=4, K=128, V=128))
    for K, V in ((64, 64), (64, 128), (128, 64)):
        out.append(dict(B=2, T=333, Hqk=2, H=2, K=K, V=V))
    out.append(dict(B=1, T=1000, Hqk=16, H=16, K=128, V=128, dtype="f16"))
    out.append(dict(B=3, T=65, Hqk=1, H=1, K=64, V=64, h0=True, ht=True))
    out.append(dict(B=2, T=1000, Hqk=2, H=8, K=128, V=128, h0=True, ht=True))  # GVA (not in FLA's simple GLA)
    out.append(dict(B=2, T=333, Hqk=4, H=4, K=128, V=128, h0=True, ht=True, dtype="f16", scale=0.3))
    out.append(dict(B=1, T=1000, Hqk=4, H=4, K=128, V=128, ht=True, gate_bias=-2.0))  # fast decay
    out.append(dict(B=1, T=1000, Hqk=4, H=4, K=128, V=128, ht=True, gate_bias=8.0))   # almost no decay
    for cu_dtype in ("i32", "i64"):
        out.append(dict(lens=[1, 15, 64, 100, 411, 1500], Hqk=4, H=4, K=128, V=128, h0=True, ht=True,
                        cu_dtype=cu_dtype))
    out.append(dict(lens=[0, 63, 0, 65, 1, 0], Hqk=2, H=2, K=64, V=128, h0=True, ht=True))  # empty sequences
    out.append(dict(lens=[64, 128, 192], Hqk=2, H=2, K=128, V=64, ht=True, dtype="f16"))
    if large:
        out.append(dict(B=4, T=4096, Hqk=16, H=16, K=128, V=128, ht=True))
        out.append(dict(lens=[4096, 1, 2000, 333, 7], Hqk=8, H=8, K=128, V=128, h0=True, ht=True))
    return out


def case_name(c):
    parts = []
    if c.get("lens") is not None:
        parts.append("varlen[" + ",".join(map(str, c["lens"])) + "]" + ("/i64" if c.get("cu_dtype") == "i64" else "/i32"))
    else:
        parts.append(f"B={c['B']} T={c['T']}")
    parts.append(f"H={c['Hqk']}/{c['H']} K={c['K']} V={c['V']} {c.get('dtype', 'bf16')}")
    if c.get("h0"):
        parts.append("h0")
    if c.get("ht"):
        parts.append("ht")
    if "scale" in c:
        parts.append(f"scale={c['scale']}")
    if "gate_bias" in c:
        parts.append(f"gate_bias={c['gate_bias']}")
    return " ".join(parts)


def run_case(qla, c, gen, verbose):
    x = make_inputs(c, gen)
    scale = c.get("scale")
    sc = scale if scale is not None else c["K"] ** -0.5
    o_bytes = x["q"].element_size() * x["B"] * x["T"] * c["H"] * c["V"]
    ht_bytes = 4 * x["N"] * c["H"] * c["K"] * c["V"] if c.get("ht") else 0
    poison_allocator(o_bytes, ht_bytes)
    o, ht = qla.chunk_simple_gla(x["q"], x["k"], x["v"], x["g"], scale=scale, initial_state=x["initial_state"],
                                 output_final_state=bool(c.get("ht")), cu_seqlens=x["cu_seqlens"])
    torch.cuda.synchronize()
    ro, rht = chunked_ref(x["q"], x["k"], x["v"], x["g"], sc, x["initial_state"], x["cu_seqlens"])
    errs = {}
    assert o.shape == ro.shape and o.dtype == x["q"].dtype, f"o: {tuple(o.shape)} {o.dtype}"
    assert torch.isfinite(o).all(), "o holds NaN/Inf"
    errs["o"] = rms_rel(o, ro)
    if c.get("ht"):
        assert ht is not None and ht.dtype == torch.float32 and ht.shape == rht.shape
        assert torch.isfinite(ht).all(), "final_state holds NaN/Inf"
        errs["ht"] = rms_rel(ht, rht)
    else:
        assert ht is None
    ok = all(e <= BAR for e in errs.values())
    return ok, errs


def self_check(gen):
    """The chunked float64 reference against the token-by-token recurrence."""
    for c in (dict(B=2, T=130, Hqk=1, H=2, K=64, V=64, h0=True),
              dict(lens=[0, 1, 64, 65, 3], Hqk=2, H=2, K=64, V=128, h0=True)):
        x = make_inputs(c, gen)
        a = recurrent_ref(x["q"], x["k"], x["v"], x["g"], 0.125, x["initial_state"], x["cu_seqlens"])
        b = chunked_ref(x["q"], x["k"], x["v"], x["g"], 0.125, x["initial_state"], x["cu_seqlens"])
        for u, w in zip(a, b):
            e = rms_rel(w, u)
            if e > SELF_CHECK_BAR:
                raise AssertionError(f"chunked reference vs recurrence: {e:.3e} > {SELF_CHECK_BAR} ({case_name(c)})")


def bad_inputs(qla, gen):
    """Each must raise QlaError whose message names the argument."""
    x = make_inputs(dict(B=1, T=64, Hqk=2, H=2, K=64, V=64), gen)
    q, k, v, g = x["q"], x["k"], x["v"], x["g"]
    fails = []
    checks = [
        ("K = 96", lambda: qla.chunk_simple_gla(torch.zeros(1, 64, 2, 96, device="cuda", dtype=torch.bfloat16),
                                                torch.zeros(1, 64, 2, 96, device="cuda", dtype=torch.bfloat16), v, g),
         "K = 96"),
        ("k dtype", lambda: qla.chunk_simple_gla(q, k.half(), v, g), "k has dtype"),
        ("g shape", lambda: qla.chunk_simple_gla(q, k, v, g[:, :, :1].contiguous()), "g has shape"),
        ("varlen B=2", lambda: qla.chunk_simple_gla(q.expand(2, -1, -1, -1), k.expand(2, -1, -1, -1),
                                                    v.expand(2, -1, -1, -1), g.expand(2, -1, -1),
                                                    cu_seqlens=torch.tensor([0, 64], device="cuda")), "B = 1"),
        ("cu end", lambda: qla.chunk_simple_gla(q, k, v, g, cu_seqlens=torch.tensor([0, 60], device="cuda")),
         "must end at T"),
        ("state_v_first", lambda: qla.chunk_simple_gla(q, k, v, g, state_v_first=True), "state_v_first"),
    ]
    for name, f, want in checks:
        try:
            f()
            fails.append(f"{name}: no error")
        except qla.QlaError as e:
            if want not in str(e):
                fails.append(f"{name}: message {str(e)!r} lacks {want!r}")
    return fails


def graph_case(qla, gen):
    """A CUDA-graph capture and replay gives the eager result (bit for bit)."""
    c = dict(lens=[1, 15, 64, 100, 411, 1500], Hqk=4, H=4, K=128, V=128, h0=True, ht=True)
    x = make_inputs(c, gen)
    args = dict(initial_state=x["initial_state"], output_final_state=True, cu_seqlens=x["cu_seqlens"])
    o0, h0 = qla.chunk_simple_gla(x["q"], x["k"], x["v"], x["g"], **args)  # compiles, loads
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=s):
            o1, h1 = qla.chunk_simple_gla(x["q"], x["k"], x["v"], x["g"], **args)
    torch.cuda.current_stream().wait_stream(s)
    graph.replay()
    torch.cuda.synchronize()
    return torch.equal(o0, o1) and torch.equal(h0, h1)


def main():
    global torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--filter", default="")
    ap.add_argument("--no-large", action="store_true")
    ap.add_argument("--no-graph", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    try:
        import torch as _torch
        torch = _torch
    except ImportError:
        print("SKIP: no PyTorch")
        return 0
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 0
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import qla
    DTYPES.update(bf16=torch.bfloat16, f16=torch.float16)
    seed = a.seed if a.seed is not None else int(time.time() * 1000) % (2 ** 31)
    print(f"seed {seed}  bar {BAR}  {torch.cuda.get_device_name()}")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    self_check(gen)
    print("float64 reference: chunked form == recurrence")
    passed = failed = 0
    for c in cases(not a.no_large):
        name = case_name(c)
        if a.filter and a.filter not in name:
            continue
        try:
            ok, errs = run_case(qla, c, gen, a.verbose)
            detail = "  ".join(f"{k} {v:.2e}" for k, v in errs.items())
        except Exception as e:  # noqa: BLE001
            ok, detail = False, f"{type(e).__name__}: {e}"
            if a.verbose:
                traceback.print_exc()
        print(f"{'PASS' if ok else 'FAIL'}  {name:70s} {detail}")
        passed += ok
        failed += not ok
    bad = bad_inputs(qla, gen)
    for f in bad:
        print(f"FAIL  bad input: {f}")
    print(f"{'FAIL' if bad else 'PASS'}  bad inputs raise QlaError naming the problem")
    failed += bool(bad)
    passed += not bad
    if not a.no_graph:
        ok = graph_case(qla, gen)
        print(f"{'PASS' if ok else 'FAIL'}  CUDA graph replay == eager")
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
