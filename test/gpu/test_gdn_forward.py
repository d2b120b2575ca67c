"""GPU conformance suite of the GDN chunked-prefill forward,
qla.chunk_gated_delta_rule (contract: the design's GDN.md, same as FLA's
chunk_gated_delta_rule).

Every run draws fresh random inputs (the seed comes from the clock and is
printed; --seed reproduces a run) and compares o and the final state with a
float64 reference computed with PyTorch on the GPU (the chunked gate-free form
of GDN.md, itself checked against the token-by-token recurrence at the start).
Metric: rms(out - ref) / rms(ref), bar 0.005 for each. Outputs must hold no
NaN/Inf; the caching allocator is seeded with NaN-filled blocks of the output
sizes before each call, so an output element the operator never writes is
likely to show up as NaN. Bad inputs must raise an exception whose message
names the problem.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 test/gpu/test_gdn_forward.py
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
BAR = 0.005          # rms relative error bar for o and the final state (GDN.md)
SPLIT_SLACK = 1.25   # a split's error vs float64 may exceed the unsplit kernel's by this factor at most
SELF_CHECK_BAR = 1e-10  # chunked float64 reference vs token-by-token float64 recurrence
CHUNK = 64

torch = None  # imported in main(), so that the module compiles and SKIPs without PyTorch
F = None


# ----------------------------------------------------------------------------
# float64 references (GPU)
# ----------------------------------------------------------------------------

def l2norm64(x):
    """x / sqrt(sum x^2 + 1e-6) over the last dim, as use_qk_l2norm_in_kernel does."""
    x = x.double()
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def _sequences(B, T, cu):
    """[(batch row, bos, eos)] of the N sequences."""
    if cu is None:
        return [(b, 0, T) for b in range(B)]
    c = [int(x) for x in cu.tolist()]
    return [(0, c[i], c[i + 1]) for i in range(len(c) - 1)]


def _prepare(q, k, v, g, beta, l2norm):
    """float64 copies with q/k expanded to the v-heads (v-head j reads q/k head j // group)."""
    Hqk, Hv = q.shape[2], v.shape[2]
    q64 = l2norm64(q) if l2norm else q.double()
    k64 = l2norm64(k) if l2norm else k.double()
    group = Hv // Hqk
    if group > 1:
        q64 = q64.repeat_interleave(group, dim=2)
        k64 = k64.repeat_interleave(group, dim=2)
    return q64, k64, v.double(), g.double(), beta.double()


def _heads_first(x):
    """[B, L, H, ...] -> [B*H, L, ...]"""
    B, L, H = x.shape[:3]
    return x.transpose(1, 2).reshape(B * H, L, *x.shape[3:])


def _heads_last(x, B):
    """[B*H, L, ...] -> [B, L, H, ...]"""
    BH, L = x.shape[:2]
    return x.reshape(B, BH // B, L, *x.shape[2:]).transpose(1, 2)


def chunked_core(q, k, v, g, beta, scale, S, C=CHUNK):
    """Gate-free chunked form, float64, batched over the leading dim n.
    q, k: [n, L, K]; v: [n, L, V]; g, beta: [n, L]; S: [n, K, V] (updated copy returned).
    Returns o [n, L, V], S [n, K, V].

    Per chunk: A = (I + strict_lower(diag(beta) K K^T))^-1; U = K S;
    W = V - D U; Vd = (Gamma o A) diag(beta) W;
    O = scale D (Q S) + (scale Gamma o tril(Q K^T)) Vd;
    S = e^{gamma_L} S + K^T (e^{gamma_L - gamma} o Vd).
    Gamma_ij = e^{gamma_i - gamma_j} is formed directly (exponent <= 0), never
    through D^-1, so harsh gates stay finite. Padded tokens (k = v = q = g = beta
    = 0) leave the state unchanged."""
    n, L, K = k.shape
    V = v.shape[-1]
    NC = (L + C - 1) // C
    pad = NC * C - L
    if pad:
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        g, beta = (F.pad(x, (0, pad)) for x in (g, beta))
    q = q.reshape(n, NC, C, K)
    k = k.reshape(n, NC, C, K)
    v = v.reshape(n, NC, C, V)
    gam = g.reshape(n, NC, C).cumsum(-1)
    beta = beta.reshape(n, NC, C)

    lower = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    diff = gam[..., :, None] - gam[..., None, :]
    Gam = torch.where(lower, torch.exp(torch.where(lower, diff, torch.zeros_like(diff))), torch.zeros_like(diff))
    del diff
    eye = torch.eye(C, dtype=torch.float64, device=q.device)
    Lm = torch.tril(beta[..., :, None] * (k @ k.transpose(-1, -2)), -1)
    A = torch.linalg.solve_triangular(eye + Lm, eye.expand_as(Lm), upper=False, unitriangular=True)
    del Lm
    GAb = Gam * A * beta[..., None, :]          # (Gamma o A) diag(beta)
    del A
    P = scale * Gam * (q @ k.transpose(-1, -2))  # Gamma is zero above the diagonal
    del Gam
    eg = torch.exp(gam)                          # [n, NC, C]
    egL = eg[..., -1]                            # [n, NC]
    dec = torch.exp(gam[..., -1:] - gam)         # [n, NC, C]

    o = torch.empty(n, NC, C, V, dtype=torch.float64, device=q.device)
    S = S.clone()
    for c in range(NC):
        kc, qc = k[:, c], q[:, c]
        W = v[:, c] - eg[:, c, :, None] * (kc @ S)
        Vd = GAb[:, c] @ W
        o[:, c] = scale * eg[:, c, :, None] * (qc @ S) + P[:, c] @ Vd
        S = egL[:, c, None, None] * S + kc.transpose(-1, -2) @ (dec[:, c, :, None] * Vd)
    return o.reshape(n, NC * C, V)[:, :L], S


def naive_core(q, k, v, g, beta, scale, S):
    """The recurrence of GDN.md token by token, float64, batched over n."""
    L = k.shape[1]
    o = torch.empty(v.shape, dtype=torch.float64, device=v.device)
    S = S.clone()
    for t in range(L):
        S = S * torch.exp(g[:, t])[:, None, None]
        u = beta[:, t, None] * (v[:, t] - torch.einsum("nk,nkv->nv", k[:, t], S))
        S = S + k[:, t, :, None] * u[:, None, :]
        o[:, t] = scale * torch.einsum("nk,nkv->nv", q[:, t], S)
    return o, S


def reference(q, k, v, g, beta, scale=None, initial_state=None, cu_seqlens=None, l2norm=False, core=chunked_core):
    """float64 o [B, T, Hv, V] and final state [N, Hv, K, V] of the contract."""
    B, T, Hqk, K = q.shape
    Hv, V = v.shape[2], v.shape[3]
    scale = K ** -0.5 if scale is None else scale
    q64, k64, v64, g64, b64 = _prepare(q, k, v, g, beta, l2norm)
    seqs = _sequences(B, T, cu_seqlens)
    N = len(seqs)
    h0 = (initial_state.double() if initial_state is not None
          else torch.zeros(N, Hv, K, V, dtype=torch.float64, device=v.device))
    o = torch.zeros(B, T, Hv, V, dtype=torch.float64, device=v.device)
    ht = torch.empty(N, Hv, K, V, dtype=torch.float64, device=v.device)
    if cu_seqlens is None:  # all B sequences at once: batch dim = B * Hv
        args = [_heads_first(x) for x in (q64, k64, v64, g64, b64)]
        ob, S = core(*args, scale, h0.reshape(B * Hv, K, V))
        o[:] = _heads_last(ob, B)
        ht[:] = S.reshape(B, Hv, K, V)
    else:
        for n, (b, bos, eos) in enumerate(seqs):
            if eos == bos:
                ht[n] = h0[n]
                continue
            args = [_heads_first(x[b:b + 1, bos:eos]) for x in (q64, k64, v64, g64, b64)]
            on, S = core(*args, scale, h0[n])
            o[b, bos:eos] = _heads_last(on, 1)[0]
            ht[n] = S
    return o, ht


def rms_rel(out, ref):
    d = out.double() - ref.double()
    den = ref.double().pow(2).mean().sqrt()
    return (d.pow(2).mean().sqrt() / den).item() if den > 0 else float(d.abs().max().item())


# ----------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------

DTYPES = {}  # filled in main(): "bf16" -> torch.bfloat16, ...


def make_inputs(case, gen):
    """Random inputs as GDN.md asks: q, k random then L2-normalized (raw with
    l2norm in the kernel), v random, g = logsigmoid(randn) or the harsh gates
    -a softplus(0.5 randn + 1) with a spread over [0, 16] across the heads
    (head 0: a = 0, no decay), beta = sigmoid(randn)."""
    dev = "cuda"
    dt = DTYPES[case["dtype"]]
    Hqk, Hv, K, V = case["Hqk"], case["Hv"], case["K"], case["V"]
    lens = case.get("lens")
    if lens:
        B, T = 1, sum(lens)
        offs = [0]
        for L in lens:
            offs.append(offs[-1] + L)
        cu = torch.tensor(offs, dtype=torch.int64 if case.get("cu_dtype", "i32") == "i64" else torch.int32,
                          device=dev)
        N = len(lens)
    else:
        B, T, cu, N = case["B"], case["T"], None, case["B"]

    def randn(*shape):
        return torch.randn(*shape, device=dev, dtype=torch.float32, generator=gen)

    q, k = randn(B, T, Hqk, K), randn(B, T, Hqk, K)
    if not case.get("l2"):
        q, k = F.normalize(q, p=2, dim=-1), F.normalize(k, p=2, dim=-1)
    q, k = q.to(dt), k.to(dt)
    v = randn(B, T, Hv, V).to(dt)
    if case.get("gates", "logsigmoid") == "harsh":
        a = torch.linspace(0.0, 16.0, Hv, device=dev) if Hv > 1 else torch.zeros(1, device=dev)
        g = -a * F.softplus(0.5 * randn(B, T, Hv) + 1.0)
    else:
        g = F.logsigmoid(randn(B, T, Hv))
    beta = torch.sigmoid(randn(B, T, Hv)).to(DTYPES[case.get("beta", "f32")])
    h0 = randn(N, Hv, K, V) if case.get("h0") else None
    return dict(q=q, k=k, v=v, g=g.contiguous(), beta=beta, initial_state=h0, cu_seqlens=cu, B=B, T=T, N=N)


def poison_allocator(*nbytes):
    """Leave NaN-filled blocks of these sizes in PyTorch's caching allocator, so
    that outputs of those sizes allocated next are likely to start as NaN."""
    blocks = [torch.full(((n + 3) // 4,), float("nan"), dtype=torch.float32, device="cuda") for n in nbytes if n > 0]
    torch.cuda.synchronize()
    del blocks


# ----------------------------------------------------------------------------
# cases
# ----------------------------------------------------------------------------

def case_name(c):
    parts = []
    if c.get("lens"):
        L = c["lens"]
        parts.append("varlen[" + (",".join(map(str, L)) if len(L) <= 8 else f"{len(L)} seqs, {sum(L)} tok") + "]"
                     + ("/i64" if c.get("cu_dtype") == "i64" else "/i32"))
    else:
        parts.append(f"B={c['B']} T={c['T']}")
    parts.append(f"H={c['Hqk']}/{c['Hv']}")
    parts.append(f"K={c['K']}" + (f",V={c['V']}" if c["V"] != c["K"] else "=V"))
    parts.append(c["dtype"] + ("" if c.get("beta", "f32") == "f32" else f" beta={c['beta']}"))
    if c.get("gates") == "harsh":
        parts.append("harsh-g")
    if c.get("h0"):
        parts.append("h0")
    if not c.get("ofs", True):
        parts.append("no-ht")
    if c.get("l2"):
        parts.append("l2norm-in-kernel")
    if c.get("scale") is not None:
        parts.append(f"scale={c['scale']}")
    if c.get("seg"):
        parts.append(f"seg={c['seg']}" if c["seg"] > 0 else "no-split")
    return " ".join(parts)


def build_cases():
    base = dict(B=1, T=64, Hqk=2, Hv=4, K=128, V=128, dtype="bf16", beta="f32", gates="logsigmoid",
                h0=False, ofs=True, lens=None, l2=False, scale=None)

    def C(**kw):
        c = dict(base)
        c.update(kw)
        return c

    L1 = [1, 15, 64, 100, 411, 1500]
    L2 = [1] * 5 + [15]
    cases = []
    # sequence lengths around the chunk size, batch 1 and 2
    for T in (1, 63, 64, 65, 333, 1000, 4096):
        for B in (1, 2):
            cases.append(C(B=B, T=T, h0=(T % 2 == 1)))
    # harsh gates (a in [0, 16], head 0 without decay)
    for T, B, h0 in ((65, 2, True), (1000, 2, False), (4096, 1, True)):
        cases.append(C(B=B, T=T, h0=h0, gates="harsh"))
    # varlen
    cases += [
        C(lens=L1, cu_dtype="i32"),
        C(lens=L1, cu_dtype="i64", h0=True, gates="harsh"),
        C(lens=L2, cu_dtype="i64"),
        C(lens=L2, cu_dtype="i32", h0=True, gates="harsh"),
        C(lens=L1, Hqk=2, Hv=6, h0=True),
        C(lens=L1, K=64, V=64, h0=True),
        C(lens=L1, dtype="f16", beta="f16", h0=True),
        C(lens=L1, beta="bf16", ofs=False),
        C(lens=L1, l2=True, h0=True),
    ]
    # GVA: Hv / Hqk in {1, 2, 3, 4}
    for Hv in (2, 4, 6, 8):
        cases.append(C(B=2, T=333, Hqk=2, Hv=Hv, h0=True))
    cases += [C(B=1, T=200, Hqk=1, Hv=3, gates="harsh"), C(B=1, T=1000, Hqk=4, Hv=16, h0=True)]
    # initial state x output_final_state
    for h0 in (False, True):
        for ofs in (False, True):
            cases.append(C(B=2, T=200, h0=h0, ofs=ofs))
    # K = V = 64
    for T, B, gates in ((1, 2, "logsigmoid"), (65, 2, "harsh"), (1000, 2, "logsigmoid")):
        cases.append(C(B=B, T=T, K=64, V=64, gates=gates, h0=True))
    # K != V (the contract allows K, V in {64, 128, 256} independently)
    cases += [C(B=2, T=200, K=64, V=128, h0=True), C(B=2, T=200, K=128, V=64, h0=True)]
    # V = 256 (the fused kernel in 128- or 64-wide slices, the state kernel in 32-wide ones)
    cases += [C(B=2, T=1000, K=128, V=256, h0=True), C(lens=L1, K=64, V=256, l2=True, h0=True),
              C(B=1, T=4096, Hqk=4, Hv=8, K=128, V=256, gates="harsh", seg=8)]
    # K = 256 (the two-kernel path, unsplit)
    cases += [C(B=2, T=1000, K=256, V=128, h0=True), C(lens=L1, K=256, V=256, l2=True, h0=True),
              C(B=1, T=333, Hqk=1, Hv=2, K=256, V=64, gates="harsh")]
    # f16, beta dtypes
    cases += [C(B=2, T=65, dtype="f16"), C(B=2, T=1000, dtype="f16", gates="harsh", h0=True),
              C(B=2, T=333, dtype="f16", beta="f16"), C(B=2, T=333, beta="bf16", h0=True),
              C(B=1, T=4096, beta="bf16", Hqk=4, Hv=8)]
    # q/k L2 normalization inside the operator (raw q, k passed)
    cases += [C(B=2, T=333, l2=True), C(B=2, T=1000, dtype="f16", l2=True, h0=True),
              C(B=2, T=65, K=64, V=64, l2=True, gates="harsh")]
    # explicit scale
    cases.append(C(B=2, T=200, scale=0.5, h0=True))
    # exact context parallelism: sequences cut into segments of `seg` chunks
    # (forced; the cost model picks its own for the large 2/8 case below)
    cases += [C(B=2, T=1000, h0=True, seg=3), C(B=1, T=4096, gates="harsh", h0=True, seg=8),
              C(B=2, T=333, Hqk=2, Hv=6, dtype="f16", seg=1), C(lens=L1, h0=True, gates="harsh", seg=2),
              C(lens=L1, cu_dtype="i64", seg=5, beta="bf16"), C(lens=L2, seg=1, h0=True),
              C(lens=L1, K=64, V=64, l2=True, h0=True, seg=1), C(B=1, T=1000, K=128, V=64, seg=2, ofs=False),
              C(B=2, T=200, Hqk=1, Hv=3, K=64, V=128, l2=True, seg=1),
              # empty sequences: their final state is the initial state
              C(lens=[64, 1, 129, 0, 70], h0=True, gates="harsh", seg=1), C(lens=[0, 100, 0], h0=True)]
    # the large cases: Qwen3.5 397B TP1 heads, 32k tokens; few heads (split by the cost model)
    cases.append(C(B=1, T=32768, Hqk=16, Hv=64, h0=True, large=True))
    cases.append(C(B=1, T=32768, Hqk=2, Hv=8, h0=True, gates="harsh", large=True))
    return cases


def check_outputs(case, inp, res):
    """(ok, err_o, err_ht, note) for one call's result against the reference."""
    B, T, N = inp["B"], inp["T"], inp["N"]
    Hv, K, V = case["Hv"], case["K"], case["V"]
    dt = DTYPES[case["dtype"]]
    notes = []
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        return False, float("nan"), float("nan"), f"returned {type(res).__name__}, expected (o, final_state)"
    o, ht = res
    if not torch.is_tensor(o):
        return False, float("nan"), float("nan"), "o is not a tensor"
    ok = True
    if tuple(o.shape) != (B, T, Hv, V):
        return False, float("nan"), float("nan"), f"o shape {tuple(o.shape)}, expected {(B, T, Hv, V)}"
    if o.dtype != dt:
        ok = False
        notes.append(f"o dtype {o.dtype}, expected {dt}")
    if not o.is_cuda:
        ok = False
        notes.append("o not on the GPU")
    ref_o, ref_ht = reference(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], case.get("scale"),
                              inp["initial_state"], inp["cu_seqlens"], case.get("l2", False))
    if not torch.isfinite(o).all():
        ok = False
        notes.append(f"o has {int((~torch.isfinite(o)).sum())} NaN/Inf")
    err_o = rms_rel(o, ref_o)
    ok &= err_o <= BAR
    err_ht = float("nan")
    if case.get("ofs", True):
        if not torch.is_tensor(ht):
            return False, err_o, float("nan"), "final_state missing with output_final_state=True"
        if tuple(ht.shape) != (N, Hv, K, V):
            return False, err_o, float("nan"), f"final_state shape {tuple(ht.shape)}, expected {(N, Hv, K, V)}"
        if ht.dtype != torch.float32:
            ok = False
            notes.append(f"final_state dtype {ht.dtype}, expected float32")
        if not torch.isfinite(ht).all():
            ok = False
            notes.append(f"final_state has {int((~torch.isfinite(ht)).sum())} NaN/Inf")
        err_ht = rms_rel(ht, ref_ht)
        ok &= err_ht <= BAR
    elif ht is not None:
        ok = False
        notes.append("final_state is not None with output_final_state=False")
    if not (err_o <= BAR) or (case.get("ofs", True) and not (err_ht <= BAR)):
        notes.append(f"over the bar {BAR}")
    return ok, err_o, err_ht, "; ".join(notes)


def call(fn, case, inp, seg=None):
    return fn(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], scale=case.get("scale"),
              initial_state=inp["initial_state"], output_final_state=case.get("ofs", True),
              cu_seqlens=inp["cu_seqlens"], use_qk_l2norm_in_kernel=case.get("l2", False),
              segment_chunks=case.get("seg", 0) if seg is None else seg)


def run_case(fn, case, gen):
    inp = make_inputs(case, gen)
    saved = {n: inp[n].clone() for n in ("q", "k", "v", "g", "beta", "initial_state", "cu_seqlens")
             if inp[n] is not None}
    o_bytes = inp["B"] * inp["T"] * case["Hv"] * case["V"] * DTYPES[case["dtype"]].itemsize
    ht_bytes = inp["N"] * case["Hv"] * case["K"] * case["V"] * 4
    poison_allocator(o_bytes, o_bytes, o_bytes, ht_bytes)  # o's size thrice: scratch of that size may come first
    res = call(fn, case, inp)
    torch.cuda.synchronize()
    ok, err_o, err_ht, note = check_outputs(case, inp, res)
    changed = [n for n, x in saved.items() if not torch.equal(x, inp[n])]
    if changed:
        ok = False
        note = "; ".join(filter(None, [note, "modified its inputs: " + ", ".join(changed)]))
    if case.get("seg", 0) != 0 or case.get("large"):
        # Split against unsplit on the same inputs. The split is exact
        # algebra (S_end = P S_start + L, merged in fp32) but the recurrence
        # rounds the state to bf16 for its products at other points, so the
        # two differ by rounding where a head keeps its memory (bitwise equal
        # where the gates forget the state within a chunk or two). The bar:
        # the split is as accurate against float64 as the unsplit kernel.
        whole = call(fn, case, inp, seg=-1)
        torch.cuda.synchronize()
        _, w_o, w_ht, _ = check_outputs(case, inp, whole)
        d_o = rms_rel(res[0], whole[0])
        d_ht = rms_rel(res[1], whole[1]) if case.get("ofs", True) else 0.0
        note = "; ".join(filter(None, [note, f"vs unsplit o {d_o:.1e} ht {d_ht:.1e}; unsplit vs float64 o {w_o:.2e}"
                                       + (f" ht {w_ht:.2e}" if case.get("ofs", True) else "")]))
        worse = err_o > SPLIT_SLACK * w_o + 1e-5 or (case.get("ofs", True) and err_ht > SPLIT_SLACK * w_ht + 1e-5)
        if worse:
            ok = False
            note += f" (split more than {SPLIT_SLACK}x the unsplit error)"
    return ok, err_o, err_ht, note


def run_graph_case(fn, case, gen):
    """The forward captured in a CUDA graph and replayed on new data in the same
    buffers must match an eager call (the benchmark times graph replays)."""
    inp = make_inputs(case, gen)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            call(fn, case, inp)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = call(fn, case, inp)
    fresh = make_inputs(case, gen)
    for n in ("q", "k", "v", "g", "beta", "initial_state"):
        if inp[n] is not None:
            inp[n].copy_(fresh[n])
    graph.replay()
    torch.cuda.synchronize()
    eager = call(fn, case, inp)
    torch.cuda.synchronize()
    e_o = rms_rel(out[0], eager[0])
    e_ht = rms_rel(out[1], eager[1]) if case.get("ofs", True) else float("nan")
    ok = e_o <= 1e-6 and (not case.get("ofs", True) or e_ht <= 1e-6)
    return ok, e_o, e_ht, "" if ok else "graph replay differs from an eager call on the same inputs"


# ----------------------------------------------------------------------------
# bad inputs
# ----------------------------------------------------------------------------

def bad_input_cases(fn):
    """(name, thunk, keywords): the thunk calls the operator on a bad input the
    way a new user would; the message must contain one of the keywords
    (case-insensitive). Nothing is pre-allocated for the outputs."""
    dev = "cuda"
    bf = torch.bfloat16

    def good(B=1, T=64, Hqk=2, Hv=4, K=128, V=128, dt=bf, device=dev):
        q = F.normalize(torch.randn(B, T, Hqk, K, device=device), dim=-1).to(dt)
        k = F.normalize(torch.randn(B, T, Hqk, K, device=device), dim=-1).to(dt)
        v = torch.randn(B, T, Hv, V, device=device).to(dt)
        g = F.logsigmoid(torch.randn(B, T, Hv, device=device))
        beta = torch.sigmoid(torch.randn(B, T, Hv, device=device))
        return q, k, v, g, beta

    def wrong_dtype():
        q, k, v, g, beta = good()
        return fn(q.float(), k, v, g, beta)

    def bad_segment_chunks():
        q, k, v, g, beta = good()
        return fn(q, k, v, g, beta, segment_chunks=-2)

    def mismatched_heads():
        q, k, v, g, beta = good()
        k = F.normalize(torch.randn(1, 64, 4, 128, device=dev), dim=-1).to(bf)
        return fn(q, k, v, g, beta)

    def hv_not_multiple():
        q, k, v, g, beta = good(Hqk=2, Hv=3)
        return fn(q, k, v, g, beta)

    def k96():
        q, k, v, g, beta = good(K=96)
        return fn(q, k, v, g, beta)

    def cu_with_batch():
        q, k, v, g, beta = good(B=2)
        cu = torch.tensor([0, 30, 64], dtype=torch.int32, device=dev)
        return fn(q, k, v, g, beta, cu_seqlens=cu)

    def decreasing_cu():
        q, k, v, g, beta = good()
        cu = torch.tensor([0, 40, 20, 64], dtype=torch.int32, device=dev)
        return fn(q, k, v, g, beta, cu_seqlens=cu)

    def cpu_tensors():
        q, k, v, g, beta = good(device="cpu")
        return fn(q, k, v, g, beta)

    def noncontiguous_last_dim():
        q, k, v, g, beta = good()
        wide = F.normalize(torch.randn(1, 64, 2, 256, device=dev), dim=-1).to(bf)
        q = wide[..., ::2]  # [1, 64, 2, 128] with stride 2 in the last dim
        o, _ = fn(q, k, v, g, beta)
        # The Python API supports such views (it copies them, as FLA does); the
        # C++ API rejects them (tested in qla-gdn-tests). The answer must be right.
        ref, _ = reference(q, k, v, g, beta)
        raise _Supported(rms_rel(o, ref))

    def v_dtype_differs():
        q, k, v, g, beta = good()
        return fn(q, k, v.half(), g, beta)

    def g_wrong_heads():
        q, k, v, g, beta = good()
        return fn(q, k, v, g[:, :, :2].contiguous(), beta)

    def h0_wrong_count():
        q, k, v, g, beta = good()
        cu = torch.tensor([0, 30, 64], dtype=torch.int32, device=dev)
        h0 = torch.zeros(3, 4, 128, 128, device=dev)
        return fn(q, k, v, g, beta, initial_state=h0, cu_seqlens=cu)

    return [
        ("wrong dtype (float32 q)", wrong_dtype, ["dtype", "float32", "float", "bf16", "bfloat16"]),
        ("mismatched heads (k has 4 heads, q 2)", mismatched_heads, ["head", "shape"]),
        ("Hv not a multiple of Hqk (2/3)", hv_not_multiple, ["multiple", "divis", "head"]),
        ("K = 96", k96, ["96", "64", "128", "head dim", "head_dim"]),
        ("cu_seqlens with B = 2", cu_with_batch, ["batch", "B = 1", "B=1", "B must", "B == 1"]),
        ("decreasing cu_seqlens", decreasing_cu, ["monoton", "decreas", "increas", "sorted", "order"]),
        ("CPU tensors", cpu_tensors, ["cuda", "device", "cpu", "gpu"]),
        ("non-contiguous last dim (q[..., ::2]): supported, copied", noncontiguous_last_dim, ["contiguous", "stride"]),
        ("v float16 with q/k bfloat16", v_dtype_differs, ["dtype", "float16", "half", "same type"]),
        ("g with 2 heads, v with 4", g_wrong_heads, ["shape", "head"]),
        ("initial_state for 3 sequences, cu_seqlens for 2", h0_wrong_count, ["initial_state", "state", "sequence"]),
        ("segment_chunks = -2", bad_segment_chunks, ["segment_chunks"]),
    ]


class _Accepted(Exception):
    """Raised by a bad-input thunk that got through the call, to report what happened."""


class _Supported(Exception):
    """Raised by a thunk whose input the API supports: carries o's rms relative error."""


def run_bad_case(thunk, keywords):
    try:
        thunk()
        torch.cuda.synchronize()
    except _Accepted as e:
        return False, "", f"no exception raised ({e})"
    except _Supported as e:
        err = float(e.args[0])
        ok = err <= 5e-3
        return ok, f"accepted (supported input); o vs the float64 reference: rms rel {err:.1e}", (
            "" if ok else "accepted but wrong")
    except Exception as e:  # noqa: BLE001 — any exception type is fine; its message is checked
        msg = f"{type(e).__name__}: {e}".strip()
        low = msg.lower()
        named = any(kw.lower() in low for kw in keywords)
        return named, msg, ("" if named else "message does not name the problem (expected one of: "
                            + ", ".join(repr(k) for k in keywords) + ")")
    return False, "", "no exception raised"


# ----------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------

def self_check_reference(gen):
    """The chunked float64 reference against the token-by-token recurrence."""
    results = []
    probes = [
        dict(B=2, T=150, Hqk=2, Hv=4, K=64, V=32, dtype="bf16", h0=True, gates="harsh"),
        dict(B=1, T=130, Hqk=1, Hv=3, K=32, V=64, dtype="f16", h0=False, gates="logsigmoid", l2=True),
        dict(lens=[1, 15, 64, 70, 0, 3], Hqk=2, Hv=4, K=16, V=16, dtype="bf16", h0=True, gates="harsh"),
    ]
    for p in probes:
        p.setdefault("B", 1)
        inp = make_inputs(p, gen)
        args = (inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"], p.get("scale"), inp["initial_state"],
                inp["cu_seqlens"], p.get("l2", False))
        o1, h1 = reference(*args, core=chunked_core)
        o2, h2 = reference(*args, core=naive_core)
        results.append((case_name(dict(p, ofs=True)), rms_rel(o1, o2), rms_rel(h1, h2)))
    return results


def main():
    global torch, F
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, help="reproduce a run (default: from the clock)")
    ap.add_argument("--filter", help="run only conformance cases whose name contains this")
    ap.add_argument("--no-large", action="store_true", help="skip the T = 32768, 16/64 heads case")
    ap.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph capture checks")
    ap.add_argument("--no-bad", action="store_true", help="skip the bad-input checks")
    ap.add_argument("--verbose", action="store_true", help="print tracebacks of unexpected exceptions")
    args = ap.parse_args()

    try:
        import torch as _torch
        import torch.nn.functional as _F
    except ImportError:
        print("SKIP: PyTorch is not installed")
        return 0
    torch, F = _torch, _F
    if not torch.cuda.is_available():
        print("SKIP: no GPU (torch.cuda.is_available() is False)")
        return 0
    DTYPES.update(bf16=torch.bfloat16, f16=torch.float16, f32=torch.float32)

    try:
        import qla
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import qla
    fn = getattr(qla, "chunk_gated_delta_rule", None)
    if fn is None:
        print("FAIL: qla.chunk_gated_delta_rule does not exist (python/qla/gdn.py, exported from qla)")
        print("0 passed, 1 failed")
        return 1

    seed = args.seed if args.seed is not None else int(time.time() * 1000) % 1_000_000_007
    gen = torch.Generator(device="cuda").manual_seed(seed)
    torch.manual_seed(seed)
    print(f"seed {seed} (reproduce with --seed {seed}), {torch.cuda.get_device_name()}, torch {torch.__version__}")
    t_start = time.time()
    passed = failed = 0
    W = 62

    def row(name, a, b, ok, note="", secs=None):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        fa = "-" if a is None or (isinstance(a, float) and math.isnan(a)) else f"{a:.2e}"
        fb = "-" if b is None or (isinstance(b, float) and math.isnan(b)) else f"{b:.2e}"
        st = "" if secs is None else f"{secs:6.1f}s"
        print(f"  {name:{W}s} {fa:>9s} {fb:>9s} {st:>7s}  {'PASS' if ok else 'FAIL'}{'  ' + note if note else ''}",
              flush=True)

    # 1. the reference itself
    print(f"\nreference self-check: chunked float64 form vs token-by-token recurrence (bar {SELF_CHECK_BAR:.0e})")
    print(f"  {'case':{W}s} {'o':>9s} {'ht':>9s}")
    for name, eo, eh in self_check_reference(gen):
        row(name, eo, eh, eo <= SELF_CHECK_BAR and eh <= SELF_CHECK_BAR)
    if failed:
        print("the float64 reference is inconsistent: stopping (this is a bug of the test, not of the operator)")
        print(f"{passed} passed, {failed} failed")
        return 1

    # 2. conformance
    print(f"\nconformance: rms(out - ref) / rms(ref), bar {BAR} for o and the final state (ht)")
    print(f"  {'case':{W}s} {'o':>9s} {'ht':>9s} {'time':>7s}")
    cases = build_cases()
    if args.no_large:
        cases = [c for c in cases if not c.get("large")]
    if args.filter:
        cases = [c for c in cases if args.filter in case_name(c)]
    broken = False
    for c in cases:
        name = case_name(c)
        t0 = time.time()
        try:
            ok, eo, eh, note = run_case(fn, c, gen)
        except Exception as e:  # noqa: BLE001
            ok, eo, eh, note = False, None, None, f"raised {type(e).__name__}: {str(e).strip()[:300]}"
            if args.verbose:
                traceback.print_exc()
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                broken = True
        row(name, eo, eh, ok, note, time.time() - t0)
        if c.get("large"):
            torch.cuda.empty_cache()
        if broken:
            print("the CUDA context is broken (asynchronous error): stopping")
            break

    # 3. CUDA graph capture
    if not args.no_graph and not broken:
        print("\nCUDA graph: capture, replay on new data in the same buffers, compare with an eager call (bar 1e-6)")
        gcases = [dict(B=2, T=333, Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True, ofs=True),
                  dict(lens=[1, 15, 64, 100, 411, 1500], Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True,
                       ofs=True, cu_dtype="i32"),
                  dict(lens=[1, 15, 64, 100, 411, 1500], Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True,
                       ofs=True, cu_dtype="i32", seg=2)]
        for c in gcases:
            c.setdefault("B", 1)
            name = "graph " + case_name(c)
            t0 = time.time()
            try:
                ok, eo, eh, note = run_graph_case(fn, c, gen)
            except Exception as e:  # noqa: BLE001
                ok, eo, eh, note = False, None, None, f"raised {type(e).__name__}: {str(e).strip()[:300]}"
                if args.verbose:
                    traceback.print_exc()
                try:
                    torch.cuda.synchronize()
                except Exception:  # noqa: BLE001
                    broken = True
            row(name, eo, eh, ok, note, time.time() - t0)
            if broken:
                print("the CUDA context is broken (asynchronous error): stopping")
                break

    # 3b. determinism: 100 calls on the same inputs give bitwise-identical outputs
    if not broken:
        print("\nrepeatability: 100 calls on the same inputs, outputs bitwise identical")
        for c in (dict(B=2, T=1000, Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True, ofs=True),
                  dict(lens=[1, 15, 64, 100, 411, 1500], Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True,
                       ofs=True, cu_dtype="i32", seg=2)):
            c.setdefault("B", 1)
            t0 = time.time()
            inp = make_inputs(c, gen)
            first = call(fn, c, inp)
            same = 0
            for _ in range(100):
                o, ht = call(fn, c, inp)
                same += int(torch.equal(o, first[0]) and torch.equal(ht, first[1]))
            torch.cuda.synchronize()
            row("repeat " + case_name(c), None, None, same == 100, f"{same}/100 identical", time.time() - t0)

    # 4. bad inputs: must raise, naming the problem
    if not args.no_bad and not broken:
        print("\nbad inputs: the call must raise an exception whose message names the problem")
        for name, thunk, kws in bad_input_cases(fn):
            ok, msg, note = run_bad_case(thunk, kws)
            row("bad: " + name, None, None, ok, note)
            if msg:
                print(f"      message: {msg[:400]}")
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                print("the CUDA context is broken after a bad input (the operator launched on it): stopping")
                failed += 1
                break

    print(f"\n{passed} passed, {failed} failed  ({time.time() - t_start:.0f} s, seed {seed})")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
