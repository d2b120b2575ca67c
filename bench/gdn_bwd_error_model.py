#!/usr/bin/env python3
"""CPU error model of the QLA GDN chunked backward (kernels/gdn/*.qla).

Written to find why dg missed its bar (2026-12-01): the kernels then used the
collapsed gate gradient (rowsum(q.dq) - rowsum(v.dv)); the model ("kernel as
is" below) reproduced the measured 1-4e-2 and showed the direct form
(dg_form="direct_k", what the kernels use now) at 2-6e-3 with the same
roundings. Needs numpy and the design's gdn_bwd_check.py (../shared/design
beside the repository, or $GDN_DESIGN_DIR).

float64 everywhere, with explicit rounding (bf16 = RNE to 8 significant bits via float32 bits,
f16 = numpy float16) at each point where the kernels round; every point has a switch.
Reference: float64 token-recurrence reverse mode on the SAME bf16-valued inputs (as the GPU test).

Usage: python3 errmodel.py [experiment ...]   (see main())
       python3 bench/gdn_bwd_error_model.py t1tail [SEEDS]   (the T = 1 dk tail, docs/gdn.md)
       python3 bench/gdn_bwd_error_model.py t1hilo [SEEDS]   (... with the hi + lo recompute, HILO=1)
       python3 bench/gdn_bwd_error_model.py t1onchip [SEEDS] (... which pairs a V_new made on chip would need)
"""
import sys, time
import numpy as np

import os
sys.path.insert(0, os.environ.get("GDN_DESIGN_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                 "..", "..", "shared", "design")))
import gdn_bwd_check as ref  # token_bwd (float64 reverse mode of the token recurrence)


# ----------------------------------------------------------------------------- rounding
def bf16(x):
    x = np.asarray(x, dtype=np.float64)
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def f16(x):
    return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)


def f32(x):
    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)


# Rounding points (name -> kernel location). DT is bf16 (or f16 for the f16 run).
POINTS = {
    # gdn_fwd_prepare.qla
    "A_f16":   "prepare: blocked inverse, f16 operands lo/dh/nh/ms/mh/ds (AM = its f32 result)",
    "abw":     "prepare: frag abw: DT = cast(A*beta*e^gam)  (w operand)",
    "abu":     "prepare: frag abu: DT = cast(A*beta)        (u operand)",
    "W":       "prepare: W stored DT",
    "U":       "prepare: U stored DT",
    # gdn_fwd_state.qla
    "H":       "state: shared sb: DT = S (the W S operand, and H)",
    "VN":      "state: V_new stored DT (VN)",
    "vds":     "state: shared vds: DT = e^{gL-gam} Vd (state update operand)",
    # gdn_bwd_dh.qla
    "DH":      "dh: shared dsb: DT = dS' (K dS' operand, and DH)",
    "pt":      "dh: frag pt: DT = P^T",
    "DVD":     "dh: DVD stored DT (dvds); also ndvs = DT(-dVd) for the dS update",
    "dods":    "dh: shared dods: DT = scale e^gam dO",
    "SD_H":    "dh: <S',dS'> uses H (bf16 S') instead of f32 S'",
    # gdn_bwd_dqk.qla
    "dqk":     "dqk: a1/a2s: DT = dQK",
    "vnr":     "dqk: vns <- DT(e^{gL-gam} VN)",
    "DW":      "dqk: DW stored DT",
    # gdn_bwd_wy.qla
    "as":      "wy: shared as: DT = A (AM)",
    "das":     "wy: shared das: DT = dA",
    "tth":     "wy: frag tth: DT = A^T dA",
    "es":      "wy: shared es: DT = E",
    # outputs
    "out":     "DQ, DK, DV outputs stored DT",
}


class Cfg:
    def __init__(self, on=None, dt="bf16", dg_form="collapsed", **opt):
        self.on = set(POINTS) if on is None else set(on)
        self.rnd = bf16 if dt == "bf16" else f16
        self.dg_form = dg_form          # collapsed | direct | global | dOO
        self.opt = opt                  # variants, see below

    def r(self, name, x):
        return self.rnd(x) if name in self.on else x

    def rf16(self, name, x):
        return f16(x) if name in self.on else x


def strict_lower_mask(n):
    return np.tril(np.ones((n, n), dtype=bool), -1)


def gate(gam):
    n = len(gam)
    low = np.tril(np.ones((n, n), dtype=bool))
    return np.exp(np.where(low, gam[:, None] - gam[None, :], -np.inf))


def inv_unit_lower(L):
    n = L.shape[0]
    A = np.eye(n)
    for i in range(1, n):
        A[i, :i] = -L[i, :i] @ A[:i, :i]
    return A


def prepare_A(l, cfg, C):
    """gdn_fwd_prepare: A = (I+L)^-1, 16x16 f32 diagonal blocks, then f16 tensor-core products."""
    if "A_f16" not in cfg.on:
        return inv_unit_lower(l)
    I = np.eye(C)
    d = np.zeros((C, C))
    for b0 in range(0, C, 16):
        d[b0:b0 + 16, b0:b0 + 16] = inv_unit_lower(l[b0:b0 + 16, b0:b0 + 16])
    blk = (np.arange(C)[:, None] // 16) > (np.arange(C)[None, :] // 16)
    loff = np.where(blk, l, 0.0)
    nn = f16(d) @ f16(loff)
    nh = f16(nn)
    m = I - nn
    m = nh @ f16(m)
    m = I - m
    m = nh @ f16(m)
    m = I - m
    return f16(m) @ f16(d)


# ----------------------------------------------------------------------------- one v-head
def head_bwd(q, k, v, g, beta, h0, dO, dht, scale, C, cfg, exact=None):
    """q,k: (T,K) (the head's q/k rows), v,dO: (T,V); g,beta: (T,); h0/dht: (K,V) or None.
    Returns per-head dq (fp32 partial), dk partial, dv, dbeta, dg, dh0 and the dgamma pieces."""
    R = cfg.r
    T, Kd = k.shape
    Vd_ = v.shape[1]
    nc = -(-T // C)
    Tp = nc * C
    pad = lambda x: np.concatenate([x, np.zeros((Tp - T,) + x.shape[1:])])
    q, k, v, g, beta, dO = map(pad, (q, k, v, g, beta, dO))
    valid = np.arange(Tp) < T
    chunks = [slice(c * C, (c + 1) * C) for c in range(nc)]
    o = cfg.opt

    # ---------------- gdn_fwd_prepare
    GAM, AM, W, U = np.zeros(Tp), [], np.zeros((Tp, Kd)), np.zeros((Tp, Vd_))
    for c, e in enumerate(chunks):
        gam = np.cumsum(g[e])
        GAM[e] = gam
        kk = k[e] @ k[e].T
        l = np.where(strict_lower_mask(C), beta[e][:, None] * kk * gate(gam), 0.0)
        a = prepare_A(l, cfg, C)
        AM.append(a)
        abw = R("abw", a * (beta[e] * np.exp(gam))[None, :])
        abu = R("abu", a * beta[e][None, :])
        W[e] = R("W", abw @ k[e])
        U[e] = R("U", abu @ v[e])

    # ---------------- gdn_fwd_state (SAVE_H)
    s = np.zeros((Kd, Vd_)) if h0 is None else h0.copy()
    H, Hf, VN, VNf = [], [], np.zeros((Tp, Vd_)), np.zeros((Tp, Vd_))
    for c, e in enumerate(chunks):
        gam = GAM[e]
        gl = gam[min(T - 1 - c * C, C - 1)]
        sb = R("H", s)
        # hilo: S enters W S as a hi + lo pair (kept: "H" off) but H is stored
        # in DT for dqk and dh (gdn_fwd_state.qla HILO=1).
        H.append(bf16(s) if o.get("hilo") else sb)
        Hf.append(s.copy())
        vn = U[e] - W[e] @ sb
        vn[~valid[e]] = 0.0
        vd = R("vds", vn * np.exp(gl - gam)[:, None])
        s = s * np.exp(gl) + k[e].T @ vd
        VNf[e] = vn
        VN[e] = R("VN", vn)
    H.append(bf16(s) if o.get("hilo") else R("H", s))
    Hf.append(s.copy())
    S_T = s.copy()

    # ---------------- gdn_bwd_dh
    ds = np.zeros((Kd, Vd_)) if dht is None else dht.copy()
    DH, DVD, SD = [None] * (nc + 1), np.zeros((Tp, Vd_)), np.zeros(nc)
    DHf = [None] * (nc + 1)
    for cc in reversed(range(nc)):
        e = chunks[cc]
        gam = GAM[e]
        gl = gam[min(T - 1 - cc * C, C - 1)]
        dsb = R("DH", ds)
        DH[cc + 1] = dsb
        DHf[cc + 1] = ds.copy()
        kq = k[e] @ q[e].T
        m = np.triu(np.ones((C, C), dtype=bool)) & valid[e][None, :]
        pt = np.where(m, kq * scale * np.exp(np.where(m, gam[None, :] - gam[:, None], -np.inf)), 0.0)
        pt = R("pt", pt)
        kds = k[e] @ dsb
        dvd = pt @ dO[e] + np.exp(gl - gam)[:, None] * kds
        dvd[~valid[e]] = 0.0
        Sp = H[cc + 1] if "SD_H" in cfg.on else Hf[cc + 1]
        if o.get("SD_hilo"):          # bf16 hi + lo pair for S'
            hi = bf16(Hf[cc + 1]); Sp = hi + bf16(Hf[cc + 1] - hi)
        SD[cc] = np.sum(Sp * ds)
        if o.get("SD_split"):         # <S',dS'> = eL<S,dS'> + <diag(r)Vd, K dS'>  (doc sec.5)
            SD[cc] = (np.exp(gl) * np.sum((H[cc] if "SD_H" in cfg.on else Hf[cc]) * ds)
                      + np.sum(R("vnr", VN[e] * np.exp(gl - gam)[:, None]) * (k[e] @ ds)))
        DVD[e] = R("DVD", dvd)
        dods = R("dods", np.where(valid[e][:, None], dO[e] * scale * np.exp(gam)[:, None], 0.0))
        ndvs = R("DVD", -dvd)
        ds = ds * np.exp(gl) + q[e].T @ dods + W[e].T @ ndvs
    dh0 = ds

    # ---------------- gdn_bwd_dqk + gdn_bwd_wy + dgamma
    DQ, DK, DV, DB = (np.zeros((Tp, Kd)), np.zeros((Tp, Kd)), np.zeros((Tp, Vd_)), np.zeros(Tp))
    RQ, RV, DGAM = np.zeros(Tp), np.zeros(Tp), np.zeros(Tp)
    DGAM_dir = np.zeros(Tp)
    for c, e in enumerate(chunks):
        gam = GAM[e]
        li = min(T - 1 - c * C, C - 1)
        gl = gam[li]
        Gam = gate(gam)
        vmask = valid[e]
        hs, dhs = H[c], DH[c + 1]
        # dqk
        dqk = dO[e] @ VN[e].T
        dqk = np.where(np.tril(np.ones((C, C), dtype=bool)) & vmask[:, None], dqk * scale * Gam, 0.0)
        a1 = R("dqk", dqk)
        dq_inter = (dO[e] @ hs.T) * (scale * np.exp(gam))[:, None]
        dq_inter[~vmask] = 0.0
        dq = dq_inter + a1 @ k[e]
        rq = np.sum(q[e] * dq, 1)
        vnr_src = bf16(VN[e]) if o.get("hilo") else VN[e]   # hilo: dk's Vd from VN's hi part alone
        vr = np.where(vmask[:, None], vnr_src * np.exp(gl - gam)[:, None], 0.0)
        vr = R("vnr", vr)
        dk_r = vr @ dhs.T
        dk = a1.T @ q[e] + dk_r
        dw = -(DVD[e] @ hs.T)
        dw[~vmask] = 0.0
        dwb = R("DW", dw)
        # wy
        a = AM[c]
        As = R("as", a)
        t2 = DVD[e] @ v[e].T
        t1 = dwb @ k[e].T
        sl = strict_lower_mask(C) & vmask[:, None]
        dA = np.where(sl, (t1 * np.exp(gam)[None, :] + t2) * beta[e][None, :], 0.0)
        das = R("das", dA)
        tt = R("tth", As.T @ das)
        dl = tt @ As.T
        kk = k[e] @ k[e].T
        gm = np.where(strict_lower_mask(C), Gam, 0.0)
        d = np.where(strict_lower_mask(C), -dl, 0.0)
        dbl = np.sum(d * kk * gm, 1)
        es = R("es", d * gm * beta[e][:, None])
        mdu = As.T @ DVD[e]
        dbu = np.sum(v[e] * mdu, 1)
        dv = mdu * beta[e][:, None]
        rv = np.where(vmask, dbu * beta[e], 0.0)
        dk2 = As.T @ dwb
        dbw = np.sum(k[e] * dk2, 1)
        dk2 = dk2 * (beta[e] * np.exp(gam))[:, None] + es @ k[e] + es.T @ k[e]
        db = dbw * np.exp(gam) + dbu + dbl
        # ---- dgamma
        dgam = rq - rv
        if o.get("rq_dOO"):           # rs(dO o O) with O recomputed (bf16 operands)
            Pm = np.where(np.tril(np.ones((C, C), dtype=bool)), (q[e] @ k[e].T) * scale * Gam, 0.0)
            O = (q[e] @ hs) * (scale * np.exp(gam))[:, None] + R("pt", Pm) @ VN[e]
            dgam = np.sum(dO[e] * O, 1) * vmask - rv
        dgam = np.where(vmask, dgam, 0.0)
        sdv = SD[c]
        # direct form (GDN-BACKWARD.md sec.5, kernel's variables: kernel A = M, w = D Wk)
        QK = np.tril(q[e] @ k[e].T)
        Z1 = dqk * QK
        Mm = a                       # kernel's A is M = Gamma o A0
        Z2 = Mm * np.where(sl, dA, 0.0)   # M o dM  (dM = dA of the kernel)
        # W-term: w = M diag(beta e^gam) K -> d/dgam_j of e^gam_j: e_j beta_j k_j.(M^T dw)_j
        dK_W = dk2 * 0  # placeholder (not used)
        tW = np.sum(k[e] * (As.T @ dwb), 1) * beta[e] * np.exp(gam)
        dgd = (np.sum(q[e] * dq_inter, 1) + Z1.sum(1) - Z1.sum(0) + Z2.sum(1) - Z2.sum(0)
               + tW - np.sum(k[e] * dk_r, 1))
        dgd[li] += np.exp(gl) * np.sum(hs * dhs) + np.sum(k[e] * dk_r)
        dgd = np.where(vmask, dgd, 0.0)
        # kernel-realizable direct form ("dqk"/"wy" kernels; FLA-like):
        #   dgam = rs(q o dq) - rs(k o dk_dqk) + [rs(Z2) - cs(Z2)] + beta e^gam rs(k o A^T dw)
        #          + delta_iL (e^gL <S, dS'> + sum_i rs(k o dk_r)_i)
        rkd = np.sum(k[e] * dk, 1)                      # dk = DKH (dQK^T Q + dk_r), fp32
        rkr = np.sum(k[e] * dk_r, 1)
        if o.get("Z2") == "none":
            z2 = 0.0
        elif o.get("Z2") == "LdL":                        # Z2' = L o dL: rs = beta*dbl, cs = cs(E_f32 o KK)
            Ef = d * gm * beta[e][:, None]
            z2 = beta[e] * dbl - np.sum(Ef * kk, 0)
        else:                                           # Z2 = M o dM, fp32 A (AM) and fp32 dA (t1)
            Z2k = a * dA
            if o.get("Z2cs") == "bf16":     # column sum as a ones-vector gemm of bf16(Z2)
                z2 = Z2k.sum(1) - bf16(Z2k).sum(0)
            elif o.get("Z2cs") == "hilo":   # ... of a bf16 hi + lo pair
                hi = bf16(Z2k); z2 = Z2k.sum(1) - (hi.sum(0) + bf16(Z2k - hi).sum(0))
            else:
                z2 = Z2k.sum(1) - Z2k.sum(0)
        dgk = rq - rkd + z2 + beta[e] * np.exp(gam) * dbw
        Ssd = H[c] if "SD_H" in cfg.on else Hf[c]
        dsd = DHf[c + 1] if o.get("sd_ds_f32", True) else dhs
        dgk[li] += np.exp(gl) * np.sum(Ssd * dsd) + np.sum(rkr)
        dgk = np.where(vmask, dgk, 0.0)
        DGAM_dir[e] = dgk if cfg.dg_form == "direct_k" else dgd
        DGAM[e] = dgam
        DQ[e], DK[e], DV[e], DB[e], RQ[e], RV[e] = dq, dk + dk2, dv, db, rq, rv
        if cfg.dg_form == "collapsed":
            dgc = np.cumsum(dgam[::-1])[::-1] + sdv
        elif cfg.dg_form in ("direct", "direct_k"):
            dgc = np.cumsum(DGAM_dir[e][::-1])[::-1]
        else:
            dgc = None
        if c == 0:
            DG = np.zeros(Tp)
        if dgc is not None:
            DG[e] = dgc
    if cfg.dg_form == "global":
        DG = np.cumsum(DGAM[::-1])[::-1] + (0.0 if dht is None else np.sum(dht * S_T))
    sl_ = slice(0, T)
    return dict(dq=DQ[sl_], dk=DK[sl_], dv=DV[sl_], dbeta=DB[sl_], dg=DG[sl_], dh0=dh0,
                rq=RQ[sl_], rv=RV[sl_], sd=SD)


# ----------------------------------------------------------------------------- full problem
def make_case(seed, T, Hk, Hv, Kd, Vd, h0, dht, dt="bf16"):
    rng = np.random.default_rng(seed)
    rnd = bf16 if dt == "bf16" else f16
    nrm = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)
    q = rnd(nrm(rng.standard_normal((T, Hk, Kd))))
    k = rnd(nrm(rng.standard_normal((T, Hk, Kd))))
    v = rnd(rng.standard_normal((T, Hv, Vd)))
    g = f32(-np.log1p(np.exp(-rng.standard_normal((T, Hv)))))
    beta = f32(1 / (1 + np.exp(-rng.standard_normal((T, Hv)))))
    H0 = f32(rng.standard_normal((Hv, Kd, Vd))) if h0 else None
    dO = rnd(rng.standard_normal((T, Hv, Vd)))
    DHT = f32(rng.standard_normal((Hv, Kd, Vd))) if dht else None
    return dict(q=q, k=k, v=v, g=g, beta=beta, h0=H0, dO=dO, dht=DHT, scale=Kd ** -0.5)


def run_model(case, cfg, C=64):
    q, k, v = case["q"], case["k"], case["v"]
    Hk, Hv = q.shape[1], v.shape[1]
    grp = Hv // Hk
    out = dict(dq=np.zeros_like(q), dk=np.zeros_like(k), dv=np.zeros_like(v),
               dg=np.zeros_like(case["g"]), dbeta=np.zeros_like(case["g"]),
               dh0=np.zeros((Hv,) + case["h0"].shape[1:]) if case["h0"] is not None else None)
    for h in range(Hv):
        hk = h // grp
        r = head_bwd(q[:, hk], k[:, hk], v[:, h], case["g"][:, h], case["beta"][:, h],
                     None if case["h0"] is None else case["h0"][h], case["dO"][:, h],
                     None if case["dht"] is None else case["dht"][h], case["scale"], C, cfg)
        # "partials": each v-head's dq and dk rounded (bf16) before the GVA
        # group's sum, as a kernel that writes them in bf16 (FlashQLA) does.
        pr = cfg.rnd if cfg.opt.get("partials") else (lambda x: x)
        out["dq"][:, hk] += pr(r["dq"])
        out["dk"][:, hk] += pr(r["dk"])
        out["dv"][:, h] = r["dv"]
        out["dg"][:, h] = r["dg"]
        out["dbeta"][:, h] = r["dbeta"]
        if out["dh0"] is not None:
            out["dh0"][h] = r["dh0"]
    if "out" in cfg.on:
        for n in ("dq", "dk", "dv"):
            out[n] = cfg.rnd(out[n])
    return out


_refcache = {}


def reference(case, key):
    if key in _refcache:
        return _refcache[key]
    q, k, v = case["q"], case["k"], case["v"]
    Hk, Hv = q.shape[1], v.shape[1]
    grp = Hv // Hk
    out = dict(dq=np.zeros_like(q), dk=np.zeros_like(k), dv=np.zeros_like(v),
               dg=np.zeros_like(case["g"]), dbeta=np.zeros_like(case["g"]),
               dh0=np.zeros((Hv,) + case["h0"].shape[1:]) if case["h0"] is not None else None)
    for h in range(Hv):
        hk = h // grp
        r = ref.token_bwd(q[:, hk], k[:, hk], v[:, h], case["g"][:, h], case["beta"][:, h],
                          None if case["h0"] is None else case["h0"][h], case["scale"],
                          case["dO"][:, h], None if case["dht"] is None else case["dht"][h])
        out["dq"][:, hk] += r["dq"]
        out["dk"][:, hk] += r["dk"]
        out["dv"][:, h], out["dg"][:, h], out["dbeta"][:, h] = r["dv"], r["dg"], r["dbeta"]
        if out["dh0"] is not None:
            out["dh0"][h] = r["dS"] if "dS" in r else r["dh0"]
    _refcache[key] = out
    return out


def rms_rel(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)) / max(np.sqrt(np.mean(b ** 2)), 1e-300))


NAMES = ["dq", "dk", "dv", "dg", "dbeta", "dh0"]


def errs(case, key, cfg, C=64):
    m = run_model(case, cfg, C)
    r = reference(case, key)
    return {n: rms_rel(m[n], r[n]) for n in NAMES if r[n] is not None}


CASES = {
    "T64":      dict(T=64, Hk=1, Hv=1, Kd=128, Vd=128, h0=False, dht=False),
    "T200gva":  dict(T=200, Hk=2, Hv=4, Kd=128, Vd=128, h0=True, dht=True),
    "T150dht":  dict(T=150, Hk=1, Hv=2, Kd=128, Vd=128, h0=False, dht=True),
    "K64h0":    dict(T=70, Hk=1, Hv=2, Kd=64, Vd=64, h0=True, dht=False),
    "T129f16":  dict(T=129, Hk=2, Hv=2, Kd=64, Vd=128, h0=True, dht=True, dt="f16"),
}


def fmt(e):
    return " ".join(f"{n} {e[n]:.2e}" for n in NAMES if n in e)


T1_CASE = dict(T=1, Hk=2, Hv=4, Kd=128, Vd=128, h0=True, dht=False)


def t1_dk_errors(seeds, cfgs):
    """dk's rms-relative error (pooled over B = 2 sequences of one token, as
    the GPU suite's first case) per configuration, sorted, over `seeds`."""
    res = {n: [] for n in cfgs}
    for sd in range(seeds):
        cases = [make_case(9000 + 2 * sd + j, dt="bf16", **T1_CASE) for j in range(2)]
        for n, c in cfgs.items():
            num = den = 0.0
            for j, case in enumerate(cases):
                mm = run_model(case, c)
                r = reference(case, ("t1tail", sd, j))
                num += float(np.sum((mm["dk"] - r["dk"]) ** 2))
                den += float(np.sum(r["dk"] ** 2))
            res[n].append((num / den) ** 0.5)
    return {n: sorted(xs) for n, xs in res.items()}


def print_tail(label, xs):
    print(f"{label} median {xs[len(xs) // 2]:.2e} p99 {xs[int(.99 * (len(xs) - 1))]:.2e} "
          f"max {xs[-1]:.2e} over {sum(x > 8e-3 for x in xs)}/{len(xs)}", flush=True)


def t1tail(seeds=500):
    """The T = 1 dk tail (docs/gdn.md, "Backward"): B = 2 sequences of one
    token (dk's rms pooled over both, as the GPU suite's first case), 2/4
    heads, h0, no dht; dk's error with sets of rounding points kept in f32."""
    allp = set(POINTS)
    sets = {"kernel": set(), "abu abw": {"abu", "abw"}, "U W abu abw": {"U", "W", "abu", "abw"},
            "H VN abu abw": {"H", "VN", "abu", "abw"}, "H W abw": {"H", "W", "abw"},
            "H VN U W abu abw": {"H", "VN", "U", "W", "abu", "abw"}, "H VN W abw": {"H", "VN", "W", "abw"}}
    cfgs = {n: Cfg(on=allp - k, dg_form="direct_k") for n, k in sets.items()}
    for n, xs in t1_dk_errors(seeds, cfgs).items():
        print_tail(f"f32 {n:20s}", xs)


def t1hilo(seeds=1000):
    """The T = 1 tail with the backward's hi + lo pairs (HILO=1, 2026-12-04;
    docs/performance.md, "HILO (hi + lo pairs)"): U, its factor A
    diag(beta), V_new, the state's operand of W S and dQK (dqk's operand of
    dq's and dk's products) kept (hi + lo pairs carry ~16 bits: f32 here),
    everything else rounded as the kernels do; then the first build (without
    dQK's pair) and what else would shrink the tail."""
    allp = set(POINTS)
    rec = {"H", "VN", "U", "abu"}          # the recompute's pairs
    hilo = rec | {"dqk"}
    sets = {"kernel before HILO": (set(), {}),
            "recompute pairs only": (rec, dict(hilo=True)),
            "HILO (the kernels)": (hilo, dict(hilo=True)),
            "HILO + W, abw": (hilo | {"W", "abw"}, dict(hilo=True)),
            "HILO + DW, DVD": (hilo | {"DW", "DVD"}, dict(hilo=True)),
            "HILO + DW, DVD, pt, W, abw": (hilo | {"DW", "DVD", "pt", "W", "abw"}, dict(hilo=True))}
    cfgs = {n: Cfg(on=allp - keep, dg_form="direct_k", **opt) for n, (keep, opt) in sets.items()}
    for n, xs in t1_dk_errors(seeds, cfgs).items():
        print_tail(f"{n:26s}", xs)


def t1onchip(seeds=1000):
    """The T = 1 tail for a gradient kernel that makes V_new on chip from h
    (bf16) and A instead of reading the recompute's VN + VNL (FlashQLA's
    algebra; kernels/gdn/KERNELS.md, section 5): which hi + lo pairs it
    would still need, and what bf16 per-v-head dq and dk partials (summed
    over the GVA group afterwards) add. Issue 32's bar is FLA's tail (20 of 1000 seeds over
    dk's 8e-3 on the GPU, 2026-12-04); "kernel before HILO" rounds every
    point once."""
    allp = set(POINTS)
    sets = {"HILO (the kernels)": ({"H", "VN", "U", "abu", "dqk"}, dict(hilo=True)),
            "kernel before HILO": (set(), {}),
            "dQK pair only": ({"dqk"}, dict(hilo=True)),
            "dQK + V_new pairs": ({"dqk", "VN"}, dict(hilo=True)),
            "dQK + V_new + U, abu": ({"dqk", "VN", "U", "abu"}, dict(hilo=True)),
            "dQK + state pair": ({"dqk", "H"}, dict(hilo=True)),
            "dQK + V_new, bf16 partials": ({"dqk", "VN"}, dict(hilo=True, partials=True)),
            "HILO, bf16 partials": ({"H", "VN", "U", "abu", "dqk"}, dict(hilo=True, partials=True))}
    cfgs = {n: Cfg(on=allp - keep, dg_form="direct_k", **opt) for n, (keep, opt) in sets.items()}
    for n, xs in t1_dk_errors(seeds, cfgs).items():
        print_tail(f"{n:26s}", xs)


def main():
    argv = sys.argv[1:] or ["all"]
    if argv[0] == "t1tail":
        t1tail(int(argv[1]) if len(argv) > 1 else 500)
        return
    if argv[0] == "t1hilo":
        t1hilo(int(argv[1]) if len(argv) > 1 else 1000)
        return
    if argv[0] == "t1onchip":
        t1onchip(int(argv[1]) if len(argv) > 1 else 1000)
        return
    seeds = [1, 2, 3]
    cases = [c for c in CASES if c in argv] or list(CASES)
    exps = [a for a in argv if a not in CASES]
    allp = set(POINTS)
    configs = {
        "exact(no rounding)": Cfg(on=[]),
        "kernel (all points)": Cfg(),
        "kernel, dg direct form": Cfg(dg_form="direct"),
        "kernel, dg global form": Cfg(dg_form="global"),
    }
    if "ablate" in exps or "all" in exps:
        for p in POINTS:
            configs[f"only {p}"] = Cfg(on=[p])
        for p in POINTS:
            configs[f"all but {p}"] = Cfg(on=allp - {p})
    if "table" in exps:
        keep32 = {"U", "VN", "abu", "dqk", "pt", "DVD", "vds", "DH"}
        configs = {
            "exact (only inputs bf16)": Cfg(on=[]),
            "kernel as is (collapsed)": Cfg(),
            "kernel, direct form (rec.)": Cfg(dg_form="direct_k"),
            "kernel, direct, Z2=L.dL": Cfg(dg_form="direct_k", Z2="LdL"),
            "kernel, sequence-global": Cfg(dg_form="global"),
            "collapsed, SD from f32 S'": Cfg(on=allp - {"SD_H"}),
            "collapsed, rs(dO.O) for rq": Cfg(rq_dOO=True),
            "collapsed, 8 tiles kept f32": Cfg(on=allp - keep32),
            "storage-only (H,VN,DH,DVD,out) coll": Cfg(on={"H", "VN", "DH", "DVD", "out", "SD_H"}),
            "storage-only (H,VN,DH,DVD,out) dir": Cfg(on={"H", "VN", "DH", "DVD", "out", "SD_H"}, dg_form="direct_k"),
        }
        seeds = [11, 12, 13, 14, 15]
    if "fix" in exps or "all" in exps:
        configs["fix: SD from f32 S'"] = Cfg(on=allp - {"SD_H"})
        configs["fix: SD from hi+lo S'"] = Cfg(SD_hilo=True)
    for cn in cases:
        cs = dict(CASES[cn])
        dt = cs.pop("dt", "bf16")
        print(f"=== case {cn} {CASES[cn]}", flush=True)
        for name, cfg in configs.items():
            cfg.rnd = bf16 if dt == "bf16" else f16
            acc = {}
            for sd in seeds:
                case = make_case(sd, dt=dt, **cs)
                e = errs(case, (cn, sd), cfg)
                for n, x in e.items():
                    acc.setdefault(n, []).append(x)
            e = {n: float(np.mean(x)) for n, x in acc.items()}
            print(f"  {name:36s} {fmt(e)}   dg max/seed {max(acc['dg']):.2e}", flush=True)


if __name__ == "__main__":
    main()
