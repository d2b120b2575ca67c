"""Drives the two GDN forward kernels directly through the generic JIT API
(no host operator) on small problems and compares with a float64 token-by-token
reference. A developer check of the kernels themselves; the operator's
conformance suite is test_gdn_forward.py.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 test/gpu/gdn_kernels_smoke.py
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def reference(q, k, v, g, beta, scale, h0, cu):
    """Naive recurrence in float64. q,k [T,HK,K], v [T,HV,V], g,beta [T,HV]."""
    import torch
    T, HK, K = q.shape
    HV, V = v.shape[1], v.shape[2]
    grp = HV // HK
    o = torch.zeros(T, HV, V, dtype=torch.float64, device=q.device)
    n = len(cu) - 1
    ht = torch.zeros(n, HV, K, V, dtype=torch.float64, device=q.device)
    for s in range(n):
        for h in range(HV):
            S = h0[s, h].double().clone() if h0 is not None else torch.zeros(K, V, dtype=torch.float64, device=q.device)
            for t in range(cu[s], cu[s + 1]):
                kt, qt = k[t, h // grp].double(), q[t, h // grp].double()
                S = S * torch.exp(g[t, h].double())
                u = beta[t, h].double() * (v[t, h].double() - S.T @ kt)
                S = S + torch.outer(kt, u)
                o[t, h] = scale * (S.T @ qt)
            ht[s, h] = S
    return o, ht


def rms_rel(a, b):
    d = a.double() - b.double()
    return (d.pow(2).mean().sqrt() / b.double().pow(2).mean().sqrt().clamp_min(1e-30)).item()


def main():
    import torch
    if not torch.cuda.is_available():
        print("SKIP: no GPU")
        return 0
    import qla
    torch.manual_seed(int(time.time()) % 10000)
    fails = 0
    cases = [
        dict(lens=[200], HK=2, HV=4, K=128, V=128, h0=False, varlen=False),
        dict(lens=[64], HK=1, HV=1, K=128, V=128, h0=True, varlen=False),
        dict(lens=[1, 15, 64, 100, 130], HK=2, HV=6, K=128, V=128, h0=True, varlen=True),
        dict(lens=[70, 70], HK=1, HV=2, K=64, V=64, h0=False, varlen=False),
    ]
    for cs in cases:
        lens, HK, HV, K, V = cs["lens"], cs["HK"], cs["HV"], cs["K"], cs["V"]
        varlen = cs["varlen"]
        T = sum(lens) if varlen else lens[0]
        B = 1 if varlen else len(lens)
        dev = "cuda"
        bf = torch.bfloat16
        q = torch.nn.functional.normalize(torch.randn(B, T, HK, K, device=dev), dim=-1).to(bf)
        k = torch.nn.functional.normalize(torch.randn(B, T, HK, K, device=dev), dim=-1).to(bf)
        v = torch.randn(B, T, HV, V, device=dev).to(bf)
        g = torch.nn.functional.logsigmoid(torch.randn(B, T, HV, device=dev))
        beta = torch.sigmoid(torch.randn(B, T, HV, device=dev))
        N = len(lens)
        cu_list = [0]
        for L in lens:
            cu_list.append(cu_list[-1] + L)
        cu = torch.tensor(cu_list if varlen else [0], dtype=torch.int32, device=dev)
        h0 = torch.randn(N, HV, K, V, device=dev) if cs["h0"] else torch.zeros(N, HV, K, V, device=dev)
        defines = dict(DK=K, DV=V, VARLEN=int(varlen), HAS_H0=int(cs["h0"]), STORE_HT=1)
        kp = qla.compile(os.path.join(ROOT, "kernels/gdn/gdn_fwd_prepare.qla"), DK=K, DV=V, VARLEN=int(varlen))
        ks = qla.compile(os.path.join(ROOT, "kernels/gdn/gdn_fwd_state.qla"), **defines)
        W = torch.full((B, T, HV, K), float("nan"), device=dev, dtype=bf)
        U = torch.full((B, T, HV, V), float("nan"), device=dev, dtype=bf)
        # GC is [B, HV, 64 chunk slots] (KERNELS.md).
        slots = (T + 63) // 64 + (len(lens) - 1 if varlen else 0)
        GC = torch.full((B, HV, 64 * slots), float("nan"), device=dev)
        O = torch.full((B, T, HV, V), float("nan"), device=dev, dtype=bf)
        HT = torch.full((N, HV, K, V), float("nan"), device=dev)
        scale = K ** -0.5
        # One segment per sequence (ls = 2^30): segment ids are the sequences,
        # the segment tensors are not touched.
        HS, LS = torch.zeros(N, HV, K, V, device=dev), torch.empty(N, HV, K, V, device=dev)
        PH = PL = torch.empty(N, HV, K, K, device=dev, dtype=bf)
        AM = torch.empty(B, HV, 64 * slots, 64, device=dev)     # SAVE_A = 0: not written
        H = torch.empty(B, 1, HV, K, V, device=dev, dtype=bf)     # SAVE_H = 0: not written
        TS = torch.empty(B, T, HV, 64, device=dev, dtype=bf)     # OUT_T = 0: not written
        RKt = torch.empty(B, T, HV, device=dev)
        UL = torch.empty(B, T, HV, V, device=dev, dtype=bf)     # HILO = 0: neither written nor read
        kp(k, v, g, beta, cu, W, U, GC, AM, TS, RKt, UL, 1 << 30)
        ks(q, k, W, U, GC, cu, h0, O, HT, HS, LS, PH, PL, H, O, UL, UL, scale, 1 << 30)
        torch.cuda.synchronize()
        # reference on the flattened sequences
        qf, kf, vf = q.reshape(B * T, HK, K), k.reshape(B * T, HK, K), v.reshape(B * T, HV, V)
        gf, bff = g.reshape(B * T, HV), beta.reshape(B * T, HV)
        cur = cu_list if varlen else [i * T for i in range(B + 1)]
        o_ref, ht_ref = reference(qf.float(), kf.float(), vf.float(), gf, bff, scale, h0 if cs["h0"] else None, cur)
        e_o = rms_rel(O.reshape(B * T, HV, V), o_ref)
        e_h = rms_rel(HT, ht_ref)
        nan = bool(torch.isnan(O).any() or torch.isnan(HT).any())
        ok = e_o <= 5e-3 and e_h <= 5e-3 and not nan
        fails += 0 if ok else 1
        print(f"  lens={lens} HK={HK} HV={HV} K={K} V={V} h0={cs['h0']} varlen={varlen}: "
              f"o {e_o:.2e}  ht {e_h:.2e}{'  NaN!' if nan else ''}  {'PASS' if ok else 'FAIL'}")
    print(f"{len(cases) - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
