"""GPU checks of the serving operators (issue 29; docs/gdn.md, "Serving"):
prefill into a state pool (qla.gdn.prefill: the fused kernel reads and
writes pool slots in place), decode and speculative verify
(qla.gdn.recurrent), FLA's signature over them
(qla.fused_recurrent_gated_delta_rule), and a decode step captured in a CUDA
graph and replayed. Against the float64 reference of test_gdn_forward.py
(GDN.md's forward bar, 5e-3 rms relative) on fresh random inputs (the seed
is printed; --seed reproduces a run); slots nobody writes must be unchanged
bit for bit. Also the time of one decode step at N = 1, 64, 1024 sequences
(CUDA graph replay, median), for the record.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 test/gpu/test_serving.py [--seed N]

The kernels pass the same checks on QLA's CPU simulator (ctest gdn_sim);
this is their first run on a GPU. Prints SKIP and exits 0 without PyTorch
or an sm_90 GPU; else one PASS/FAIL line per check and "N passed, M failed"
(exit 1 on any failure).
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

BAR = 5e-3
results = []


def record(name, ok, detail=""):
    results.append(bool(ok))
    print(f"  {'PASS' if ok else 'FAIL'}  {name}" + (f"  {detail}" if detail else ""), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIP: no PyTorch")
        return 0
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        print("SKIP: no sm_90 GPU")
        return 0
    import test_gdn_forward as fw
    fw.torch, fw.F = torch, torch.nn.functional  # the reference uses both
    import qla
    import qla.gdn as G

    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    print(f"seed {seed}")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dev = "cuda"

    def rnd(*shape, dtype=torch.float32, scale=1.0):
        return (torch.randn(*shape, generator=gen, device=dev) * scale).to(dtype)

    # ---- prefill into a pool: varlen, GVA, a sequence without a start state.
    for K, V, pool_dt, seg in ((128, 128, torch.float32, 0), (64, 128, torch.bfloat16, 0), (128, 128, torch.float32, 2)):
        lens = [1, 200, 64, 700]
        N, T, Hqk, Hv = len(lens), sum(lens), 2, 4
        cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device=dev)
        q = rnd(1, T, Hqk, K, dtype=torch.bfloat16)
        k = torch.nn.functional.normalize(rnd(1, T, Hqk, K), dim=-1).to(torch.bfloat16)
        v = rnd(1, T, Hv, V, dtype=torch.bfloat16)
        g = torch.nn.functional.logsigmoid(rnd(1, T, Hv))
        beta = torch.sigmoid(rnd(1, T, Hv))
        slots = 2 * N + 1
        pool = rnd(slots, Hv, V, K, scale=0.1).to(pool_dt)
        before = pool.clone()
        si = torch.tensor([-1] + list(range(1, N)), dtype=torch.int32, device=dev)
        so = torch.tensor([N + n for n in range(N - 1)] + [N - 1], dtype=torch.int32, device=dev)  # last in place
        h0 = torch.stack([torch.zeros(Hv, K, V, device=dev) if s < 0 else before[s].float().transpose(-1, -2)
                          for s in si.tolist()])
        o_ref, ht_ref = fw.reference(q, k, v, g, beta, initial_state=h0, cu_seqlens=cu.long(), l2norm=True)
        copies = G._cu_host_copies
        o = G.prefill(q, k, v, g, beta, pool, si, so, cu_seqlens=cu, use_qk_l2norm_in_kernel=True)
        torch.cuda.synchronize()
        record(f"prefill K={K} V={V}: no device-to-host copy of a new cu_seqlens", G._cu_host_copies == copies)
        e_ht = max(fw.rms_rel(pool[so[n]].float().transpose(-1, -2), ht_ref[n]) for n in range(N))
        untouched = [s for s in range(slots) if s not in so.tolist()]
        same = all(torch.equal(pool[s], before[s]) for s in untouched)
        what = f"prefill K={K} V={V} pool {str(pool_dt)[6:]} varlen {lens}"
        record(f"{what}: o, final states in their slots, other slots unchanged",
               fw.rms_rel(o, o_ref) <= BAR and e_ht <= BAR and same,
               f"o {fw.rms_rel(o, o_ref):.2e} ht {e_ht:.2e} untouched {'same' if same else 'CHANGED'}")
        if seg == 0:
            # The same call with a bound on the longest sequence (vLLM's max_query_len): another plan
            # may be chosen, the result is the same; a bound that a sequence exceeds only costs speed.
            for bound in (max(lens), 64):
                pool.copy_(before)
                buf = torch.full_like(o, float("nan"))  # the caller's output buffer (vLLM's core_attn_out)
                o2 = G.prefill(q, k, v, g, beta, pool, si, so, cu_seqlens=cu, use_qk_l2norm_in_kernel=True,
                               max_seqlen=bound, out=buf)
                torch.cuda.synchronize()
                record(f"{what} max_seqlen={bound}: o written into the caller's out", o2 is buf)
                e2 = max(fw.rms_rel(pool[so[n]].float().transpose(-1, -2), ht_ref[n]) for n in range(N))
                record(f"{what} max_seqlen={bound}: o and final states", fw.rms_rel(o2, o_ref) <= BAR and e2 <= BAR,
                       f"o {fw.rms_rel(o2, o_ref):.2e} ht {e2:.2e}")

    # ---- a K-first pool with prefix-caching checkpoints every 128 tokens (M =
    # 3 slots per sequence, one of them -1), split into segments or not.
    for seg in (0, 2):
        lens, K, V = [100, 300, 520], 64, 128
        N, T, Hqk, Hv, M, every = len(lens), sum(lens), 1, 2, 3, 128
        cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device=dev)
        q = rnd(1, T, Hqk, K, dtype=torch.bfloat16)
        k = torch.nn.functional.normalize(rnd(1, T, Hqk, K), dim=-1).to(torch.bfloat16)
        v = rnd(1, T, Hv, V, dtype=torch.bfloat16)
        g = torch.nn.functional.logsigmoid(rnd(1, T, Hv))
        beta = torch.sigmoid(rnd(1, T, Hv))
        slots = 2 * N + N * M
        pool = rnd(slots, Hv, K, V, scale=0.1)  # K-first
        before = pool.clone()
        si = torch.arange(N, dtype=torch.int32, device=dev)
        so = si + N
        cs = torch.arange(2 * N, 2 * N + N * M, dtype=torch.int32, device=dev).reshape(N, M)
        cs[1, 0] = -1
        G.prefill(q, k, v, g, beta, pool, si, so, cu_seqlens=cu, state_pool_k_first=True, checkpoint_every=every,
                  checkpoint_slots=cs, segment_chunks=seg)
        torch.cuda.synchronize()
        worst, written = 0.0, so.tolist()
        for n in range(N):
            b0 = int(cu[n])
            o_ref, ht_ref = fw.reference(q[:, b0:b0 + lens[n]], k[:, b0:b0 + lens[n]], v[:, b0:b0 + lens[n]],
                                         g[:, b0:b0 + lens[n]], beta[:, b0:b0 + lens[n]],
                                         initial_state=before[si[n]].float()[None])
            worst = max(worst, fw.rms_rel(pool[so[n]].float(), ht_ref[0]))
            for m in range(M):
                w = int(cs[n, m])
                if w < 0 or (m + 1) * every > lens[n]:
                    continue
                written.append(w)
                L = (m + 1) * every
                _, hc = fw.reference(q[:, b0:b0 + L], k[:, b0:b0 + L], v[:, b0:b0 + L], g[:, b0:b0 + L],
                                     beta[:, b0:b0 + L], initial_state=before[si[n]].float()[None])
                worst = max(worst, fw.rms_rel(pool[w].float(), hc[0]))
        same = all(torch.equal(pool[s], before[s]) for s in range(slots) if s not in written)
        record(f"prefill K-first pool, checkpoints every {every} (lens {lens}, segment_chunks {seg}): final and "
               f"checkpoint states, "
               f"other slots unchanged", worst <= BAR and same, f"states {worst:.2e}")

    # ---- decode and verify over a pool.
    for T, pool_dt in ((1, torch.float32), (4, torch.float32), (1, torch.bfloat16)):
        N, Hqk, Hv, K, V = 3, 2, 4, 128, 128
        q, k = rnd(N, T, Hqk, K, dtype=torch.bfloat16), rnd(N, T, Hqk, K, dtype=torch.bfloat16)
        v = rnd(N, T, Hv, V, dtype=torch.bfloat16)
        a, b = rnd(N, T, Hv), rnd(N, T, Hv)
        A_log, dt_bias = rnd(Hv, scale=0.5), rnd(Hv, scale=0.5)
        slots = N + N * T
        pool = rnd(slots, Hv, V, K, scale=0.1).to(pool_dt)
        before = pool.clone()
        ri = torch.tensor([0, -1, 2], dtype=torch.int32, device=dev)
        wi = torch.arange(N, N + N * T, dtype=torch.int32, device=dev).reshape(N, T)
        o = G.recurrent(q, k, v, a, b, pool, ri, wi, use_beta_sigmoid_in_kernel=True, use_gate_in_kernel=True,
                        A_log=A_log, dt_bias=dt_bias)
        torch.cuda.synchronize()
        gl = -A_log.exp() * torch.nn.functional.softplus(a + dt_bias)
        h0 = torch.stack([torch.zeros(Hv, K, V, device=dev) if s < 0 else before[s].float().transpose(-1, -2)
                          for s in ri.tolist()])
        worst_o, worst_s = 0.0, 0.0
        for t in range(T):
            o_ref, ht_ref = fw.reference(q[:, :t + 1], k[:, :t + 1], v[:, :t + 1], gl[:, :t + 1],
                                         torch.sigmoid(b[:, :t + 1]), initial_state=h0, l2norm=True)
            worst_o = max(worst_o, fw.rms_rel(o[:, t], o_ref[:, t]))
            for n in range(N):
                worst_s = max(worst_s, fw.rms_rel(pool[wi[n, t]].float().transpose(-1, -2), ht_ref[n]))
        same = all(torch.equal(pool[s], before[s]) for s in range(N))
        record(f"recurrent T={T} pool {str(pool_dt)[6:]} (gate, beta sigmoid, L2 norm, GVA): o, every token's "
               f"state, read slots unchanged", worst_o <= BAR and worst_s <= BAR and same,
               f"o {worst_o:.2e} states {worst_s:.2e}")

    # ---- FLA's signature.
    B, T, H, K, V = 2, 5, 2, 128, 128
    q, k, v = (rnd(B, T, H, K, dtype=torch.bfloat16), rnd(B, T, H, K, dtype=torch.bfloat16),
               rnd(B, T, H, V, dtype=torch.bfloat16))
    g, beta, h0 = torch.nn.functional.logsigmoid(rnd(B, T, H)), torch.sigmoid(rnd(B, T, H)), rnd(B, H, K, V, scale=0.1)
    o, ht = qla.fused_recurrent_gated_delta_rule(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                                 use_qk_l2norm_in_kernel=True)
    o_ref, ht_ref = fw.reference(q, k, v, g, beta, initial_state=h0, l2norm=True)
    record("fused_recurrent_gated_delta_rule (FLA's signature): o and the final state",
           fw.rms_rel(o, o_ref) <= BAR and fw.rms_rel(ht, ht_ref) <= BAR,
           f"o {fw.rms_rel(o, o_ref):.2e} ht {fw.rms_rel(ht, ht_ref):.2e}")

    # ---- a decode step in a CUDA graph; its time at several batch sizes, with
    # 64-row slices of the state per CTA (the default) and whole heads.
    for N, bv in ((1, "64"), (1, "128"), (64, "64"), (64, "128"), (1024, "64"), (1024, "128")):
        os.environ["QLA_GDN_DECODE_BV"] = bv
        Hqk, Hv, K, V = 16, 32, 128, 128
        q, k = rnd(N, 1, Hqk, K, dtype=torch.bfloat16), rnd(N, 1, Hqk, K, dtype=torch.bfloat16)
        v = rnd(N, 1, Hv, V, dtype=torch.bfloat16)
        g, beta = torch.nn.functional.logsigmoid(rnd(N, 1, Hv)), torch.sigmoid(rnd(N, 1, Hv))
        pool = rnd(N, Hv, V, K, scale=0.1)
        ri = torch.arange(N, dtype=torch.int32, device=dev)
        wi = ri[:, None].contiguous()
        out = torch.empty(N, 1, Hv, V, dtype=torch.bfloat16, device=dev)
        G.recurrent(q, k, v, g, beta, pool, ri, wi, out=out)  # compile, load
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            G.recurrent(q, k, v, g, beta, pool, ri, wi, out=out)
        times = []
        for _ in range(20):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            graph.replay()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        times.sort()
        gb = N * Hv * V * K * 4 * 2 / 1e9
        del os.environ["QLA_GDN_DECODE_BV"]
        print(f"  decode N={N} BV={bv} 16/32 heads of 128, f32 pool: {times[len(times) // 2]:.1f} us per step "
              f"(graph replay, median of 20; {gb / (times[len(times) // 2] * 1e-6):.0f} GB/s of state traffic)")
    record("a decode step captured in a CUDA graph replays", True)

    # ---- slot indices: check_slots=True raises before anything runs; without
    # it a slot past the pool is none (nothing read, nothing stored).
    N, T, Hqk, Hv, K, V = 3, 1, 1, 2, 64, 64
    q = rnd(N, T, Hqk, K, dtype=torch.bfloat16)
    k = rnd(N, T, Hqk, K, dtype=torch.bfloat16)
    v = rnd(N, T, Hv, V, dtype=torch.bfloat16)
    g = torch.nn.functional.logsigmoid(rnd(N, T, Hv))
    beta = torch.sigmoid(rnd(N, T, Hv))
    pool = rnd(4, Hv, V, K, scale=0.1)
    before = pool.clone()
    ri = torch.tensor([0, 1, 2], dtype=torch.int32, device=dev)
    raised = ""
    try:
        G.recurrent(q, k, v, g, beta, pool, ri, torch.tensor([[0], [0], [2]], dtype=torch.int32, device=dev),
                    check_slots=True)
    except qla.QlaError as e:
        raised = str(e)
    torch.cuda.synchronize()
    record("recurrent(check_slots=True): two sequences writing one slot raise, the pool untouched",
           "both write slot 0" in raised and torch.equal(pool, before), raised)
    wi = torch.tensor([[0], [9], [2]], dtype=torch.int32, device=dev)  # 9: past the pool's 4 slots
    G.recurrent(q, k, v, g, beta, pool, torch.tensor([0, 7, 2], dtype=torch.int32, device=dev), wi)
    torch.cuda.synchronize()
    record("recurrent: slots past the pool read nothing and store nothing (slots 1 and 3 untouched)",
           torch.equal(pool[1], before[1]) and torch.equal(pool[3], before[3]) and not torch.equal(pool[0], before[0]))

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
