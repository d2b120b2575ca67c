"""Drives the GDN backward kernels directly through the generic JIT API (no
host operator) on small problems and compares every gradient with torch
float64 autograd through the token recurrence. A developer check of the
kernels themselves; the operator's conformance suite is test_gdn_backward.py.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 test/gpu/gdn_bwd_kernels_smoke.py
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KDIR = os.path.join(ROOT, "kernels", "gdn")


def ref_forward(q, k, v, g, beta, scale, h0, cu, l2):
    """Token recurrence in float64 (differentiable). q,k [T,HK,K], v [T,HV,V],
    g, beta [T,HV], h0 [N,HV,K,V] or None; returns o [T,HV,V], ht [N,HV,K,V]."""
    import torch
    if l2:
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    HK, HV = q.shape[1], v.shape[1]
    grp = HV // HK
    qe, ke = q.repeat_interleave(grp, 1), k.repeat_interleave(grp, 1)
    K, V = q.shape[2], v.shape[2]
    outs, hts = [], []
    for s in range(len(cu) - 1):
        S = h0[s] if h0 is not None else torch.zeros(HV, K, V, dtype=q.dtype, device=q.device)
        for t in range(cu[s], cu[s + 1]):
            S = S * torch.exp(g[t])[:, None, None]
            u = beta[t][:, None] * (v[t] - torch.einsum("hkv,hk->hv", S, ke[t]))
            S = S + ke[t][:, :, None] * u[:, None, :]
            outs.append(scale * torch.einsum("hkv,hk->hv", S, qe[t]))
        hts.append(S)
    return torch.stack(outs), torch.stack(hts)


def rms_rel(a, b):
    d = a.double() - b.double()
    return (d.pow(2).mean().sqrt() / b.double().pow(2).mean().sqrt().clamp_min(1e-30)).item()


def cdiv(a, b):
    return (a + b - 1) // b


def run_case(cs, kernels):
    import torch
    import qla
    dev = "cuda"
    lens, HK, HV, K, V = cs["lens"], cs["HK"], cs["HV"], cs["K"], cs["V"]
    varlen, l2, use_h0, use_dht = cs["varlen"], cs["l2"], cs["h0"], cs["dht"]
    dt = cs.get("dt", torch.bfloat16)
    N = len(lens)
    T = sum(lens) if varlen else lens[0]
    B = 1 if varlen else N
    q = torch.randn(B, T, HK, K, device=dev)
    k = torch.randn(B, T, HK, K, device=dev)
    if not l2:
        q, k = torch.nn.functional.normalize(q, dim=-1), torch.nn.functional.normalize(k, dim=-1)
    q, k = q.to(dt), k.to(dt)
    v = torch.randn(B, T, HV, V, device=dev).to(dt)
    g = torch.nn.functional.logsigmoid(torch.randn(B, T, HV, device=dev))
    if cs.get("nodecay"):
        g[..., 0] = 0.0
    beta = torch.sigmoid(torch.randn(B, T, HV, device=dev))
    h0 = torch.randn(N, HV, K, V, device=dev) if use_h0 else torch.zeros(1, HV, K, V, device=dev)
    do = torch.randn(B, T, HV, V, device=dev).to(dt)
    dht = torch.randn(N, HV, K, V, device=dev) if use_dht else torch.zeros(1, HV, K, V, device=dev)
    cu_list = [0]
    for L in lens:
        cu_list.append(cu_list[-1] + L)
    cu = torch.tensor(cu_list if varlen else [0], dtype=torch.int32, device=dev)
    scale = K ** -0.5

    key = (K, V, varlen, l2, use_h0, use_dht, dt)
    if key not in kernels:
        c = dict(DT="bf16" if dt == torch.bfloat16 else "f16", DK=K, DV=V, VARLEN=int(varlen), L2NORM=int(l2))
        # As the operator: the recompute's hi + lo pairs with bf16 inputs.
        hl = dict(HILO=int(dt == torch.bfloat16))
        kernels[key] = dict(
            prep=qla.compile(os.path.join(KDIR, "gdn_fwd_prepare.qla"), SAVE_A=1, **hl, **c),
            state=qla.compile(os.path.join(KDIR, "gdn_fwd_state.qla"), HAS_H0=int(use_h0), PASS=2, SAVE_H=1,
                              STORE_O=0, **hl, **c),
            dh=qla.compile(os.path.join(KDIR, "gdn_bwd_dh.qla"), HAS_H0=int(use_h0), HAS_DHT=int(use_dht), **c),
            dqk=qla.compile(os.path.join(KDIR, "gdn_bwd_dqk.qla"), **hl, **c),
            wy=qla.compile(os.path.join(KDIR, "gdn_bwd_wy.qla"), **c),
            fin=qla.compile(os.path.join(KDIR, "gdn_bwd_finish.qla"), DT=c["DT"], DK=K, VARLEN=int(varlen),
                            L2NORM=int(l2)))
    kk = kernels[key]
    nan = float("nan")
    nc = cdiv(T, 64)
    TC = 64 * (nc + (N - 1 if varlen else 0))
    NH = nc + (2 * N - 1 if varlen else 1)
    NZ = N
    f32 = torch.float32
    W = torch.full((B, T, HV, K), nan, device=dev, dtype=dt)
    U = torch.full((B, T, HV, V), nan, device=dev, dtype=dt)
    GC = torch.full((B, HV, TC), nan, device=dev)
    AM = torch.full((B, HV, TC, 64), nan, device=dev)
    H = torch.full((B, NH, HV, K, V), nan, device=dev, dtype=dt)
    VN = torch.full((B, T, HV, V), nan, device=dev, dtype=dt)
    UL = torch.full((B, T, HV, V), nan, device=dev, dtype=dt)   # HILO: the lo parts
    VNL = torch.full((B, T, HV, V), nan, device=dev, dtype=dt)
    O = torch.empty(B, T, HV, V, device=dev, dtype=dt)
    HT = torch.empty(N, HV, K, V, device=dev)
    HS = torch.zeros(NZ, HV, K, V, device=dev)
    LS = torch.empty(NZ, HV, K, V, device=dev)
    PH = PL = torch.empty(NZ, HV, K, K, device=dev, dtype=torch.bfloat16)
    DH = torch.full((B, NH, HV, K, V), nan, device=dev, dtype=dt)
    DVD = torch.full((B, T, HV, V), nan, device=dev, dtype=dt)
    DH0 = torch.full((N, HV, K, V), nan, device=dev)
    SD = torch.full((V // 32, B, HV, TC), nan, device=dev)
    DQH = torch.full((B, T, HV, K), nan, device=dev)
    DKH = torch.full((B, T, HV, K), nan, device=dev)
    DK2 = torch.full((B, T, HV, K), nan, device=dev)
    DW = torch.full((B, T, HV, K), nan, device=dev, dtype=dt)
    RQ = torch.full((B, HV, TC), nan, device=dev)
    RK = torch.full((B, HV, TC), nan, device=dev)
    RW = torch.full((B, HV, TC), nan, device=dev)
    DQ = torch.full((B, T, HK, K), nan, device=dev, dtype=dt)
    DK = torch.full((B, T, HK, K), nan, device=dev, dtype=dt)
    DV = torch.full((B, T, HV, V), nan, device=dev, dtype=dt)
    DB = torch.full((B, T, HV), nan, device=dev)
    DG = torch.full((B, T, HV), nan, device=dev)
    h0k = h0 if use_h0 else torch.zeros(N, HV, K, V, device=dev)
    dhtk = dht if use_dht else torch.zeros(N, HV, K, V, device=dev)
    TS = torch.empty(B, T, HV, 64, device=dev, dtype=dt)  # OUT_T = 0: not written
    RKt = torch.empty(B, T, HV, device=dev)
    kk["prep"](k, v, g, beta, cu, W, U, GC, AM, TS, RKt, UL, 1 << 30)
    kk["state"](q, k, W, U, GC, cu, h0k, O, HT, HS, LS, PH, PL, H, VN, UL, VNL, scale, 1 << 30)
    # One segment per sequence (ls = 2^30): the segment tensors are not touched.
    kk["dh"](q, k, W, do, GC, cu, H, dhtk, DH, DVD, DH0, SD, HS, LS, PH, PL, scale, 1 << 30)
    kk["dqk"](q, k, VN, DVD, do, GC, cu, H, DH, DQH, DKH, DW, RQ, RK, VNL, scale)
    kk["wy"](k, v, beta, GC, AM, cu, DW, DVD, DK2, DV, DB, RW)
    kk["fin"](q, k, cu, DQH, DKH, DK2, RQ, RK, RW, SD, DQ, DK, DG)
    torch.cuda.synchronize()

    # Reference: float64 autograd on the flattened sequences.
    cur = cu_list if varlen else [i * T for i in range(B + 1)]
    d64 = torch.float64
    args = [x.reshape(B * T, *x.shape[2:]).to(d64).requires_grad_() for x in (q, k, v, g, beta)]
    h064 = h0.to(d64).requires_grad_() if use_h0 else None
    o_ref, ht_ref = ref_forward(*args, scale, h064, cur, l2)
    loss = (o_ref * do.reshape(B * T, HV, V).to(d64)).sum()
    if use_dht:
        loss = loss + (ht_ref * dht.to(d64)).sum()
    loss.backward()
    got = dict(dq=DQ, dk=DK, dv=DV, dbeta=DB, dg=DG)
    refs = dict(dq=args[0].grad, dk=args[1].grad, dv=args[2].grad, dg=args[3].grad, dbeta=args[4].grad)
    bars = dict(dq=8e-3, dk=8e-3, dv=8e-3, dh0=8e-3, dbeta=2e-2, dg=2e-2)
    errs = {n: rms_rel(got[n].reshape(refs[n].shape), refs[n]) for n in refs}
    if use_h0:
        errs["dh0"] = rms_rel(DH0, h064.grad)
    ok = all(e <= bars[n] for n, e in errs.items())
    ok &= not any(bool(torch.isnan(t).any()) for t in (DQ, DK, DV, DB, DG))
    print(f"  {cs}: " + " ".join(f"{n} {e:.2e}" for n, e in errs.items()) + ("  PASS" if ok else "  FAIL"))
    return ok


def main():
    import torch
    if not torch.cuda.is_available():
        print("SKIP: no GPU")
        return 0
    seed = int(time.time()) % 100000
    torch.manual_seed(seed)
    print(f"seed {seed}")
    cases = [
        dict(lens=[64], HK=1, HV=1, K=128, V=128, varlen=False, l2=False, h0=False, dht=False),
        dict(lens=[200], HK=2, HV=4, K=128, V=128, varlen=False, l2=False, h0=True, dht=True),
        dict(lens=[150, 150], HK=1, HV=2, K=128, V=128, varlen=False, l2=True, h0=False, dht=True),
        dict(lens=[1, 15, 64, 100, 130], HK=2, HV=6, K=128, V=128, varlen=True, l2=True, h0=True, dht=True),
        dict(lens=[70, 70], HK=1, HV=2, K=64, V=64, varlen=False, l2=False, h0=True, dht=False),
        dict(lens=[190], HK=1, HV=4, K=128, V=64, varlen=False, l2=False, h0=False, dht=False, nodecay=True),
        dict(lens=[129], HK=2, HV=2, K=64, V=128, varlen=False, l2=True, h0=True, dht=True, dt=torch.float16),
    ]
    kernels = {}
    fails = sum(0 if run_case(cs, kernels) else 1 for cs in cases)
    print(f"{len(cases) - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
