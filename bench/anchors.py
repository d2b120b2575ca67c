"""FlashQLA and FlashInfer as measured anchors beside FLA and QLA (shared by
bench/gdn_forward.py and bench/gdn_backward.py).

Nothing from either project is vendored here: these helpers import their
installed packages (unpacked on the GPU machine by scripts/anchor_carry.sh)
and call their public functions.

The benchmarks make their inputs in FLA's layout:
    q, k [B, T, Hqk, K] bf16, v [B, T, Hv, V] bf16, g [B, T, Hv] log-decay f32,
    beta [B, T, Hv] (bf16 or f32), initial_state [N, Hv, K, V] f32 or None,
    cu_seqlens [N + 1] (int64 or int32) or None, output_final_state.
Each adapter converts these ONCE, when it is prepared, outside the timed call,
so that a timed call is only the anchor's own function call:

  FlashQLA (`flash_qla.chunk_gated_delta_rule`, FLA's layout and log gate,
  GVA with Hqk < Hv handled natively):
    - cu_seqlens -> int32 (its TileLang kernels are specialized on the index
      dtype; its own benchmark passes int32), and a single sequence gets
      cu_seqlens = [0, T] as in its benchmark;
    - beta -> f32 (its benchmark's dtype; bf16 -> f32 is exact, same values).
  FlashInfer (`flashinfer.gdn_prefill.chunk_gated_delta_rule`, forward only):
    - q, k, v -> packed [B*T, H, D] (views: no copy);
    - g -> alpha = exp(g) f32 [B*T, Hv] (its gate is LINEAR);
    - beta -> f32 [B*T, Hv];
    - initial_state [N, Hv, K, V] -> [N, Hv, V, K] (transposed, contiguous);
    - cu_seqlens -> int32 (required, also for one sequence: [0, T]);
    - output [B*T, Hv, V] and output_state [N, Hv, V, K] f32 preallocated;
    - max_seqlen = the longest sequence (a host-side hint its context-parallel
      path uses to size its grids; `max_seqlen_hint=False` leaves it out, as
      FlashQLA's published run did).
    Its o and final state are brought back to FLA's layout only for --check
    (outside timing).
  GVA: neither anchor needs q/k expanded to Hv heads. Should one refuse
  Hqk != Hv on its first call, the adapter repeats q/k to Hv heads (outside
  the timed region) and says so in `notes` (the row prints it).

    python3 bench/anchors.py              # numpy self-test of the converters + which anchors import
    python3 bench/anchors.py --probe      # the same, exit 1 if an anchor does not import
    python3 bench/anchors.py --gpu-smoke  # GPU: both anchors on a tiny GVA varlen problem vs a float64 recurrence
"""
import os
import sys

K_DIM = V_DIM = 128

# ----------------------------------------------------------------------------
# importers: the library or None, with the reason printed
# ----------------------------------------------------------------------------


class AnchorLib:
    """An importable anchor: `fn` is its chunk_gated_delta_rule."""

    def __init__(self, name, fn, module, version):
        self.name, self.fn, self.module, self.version = name, fn, module, version
        self.path = os.path.dirname(os.path.abspath(getattr(module, "__file__", "") or "."))

    def info(self):
        return dict(version=self.version, path=self.path)


def _skip(name, what, e):
    msg = (f"SKIP {name}: `{what}` failed ({type(e).__name__}: {str(e).strip()[:200]}); "
           f"put its unpacked site on PYTHONPATH (scripts/anchor_carry.sh)")
    print(msg, flush=True)
    return msg


def import_flashqla(quiet=False):
    """(AnchorLib or None, reason). FlashQLA's package picks its kernels by
    the GPU's compute capability at import, so without a GPU (or tilelang,
    or torch) the import fails and the reason says why."""
    try:
        import flash_qla
        fn = flash_qla.chunk_gated_delta_rule
    except Exception as e:  # noqa: BLE001  (ImportError, or tilelang's errors without a GPU)
        return None, (_skip("FlashQLA", "import flash_qla", e) if not quiet else str(e))
    return AnchorLib("flashqla", fn, flash_qla, getattr(flash_qla, "__version__", "?")), None


def import_flashinfer(quiet=False):
    """(AnchorLib or None, reason)."""
    try:
        import flashinfer
        from flashinfer.gdn_prefill import chunk_gated_delta_rule as fn
    except Exception as e:  # noqa: BLE001
        return None, (_skip("FlashInfer", "from flashinfer.gdn_prefill import chunk_gated_delta_rule", e)
                      if not quiet else str(e))
    return AnchorLib("flashinfer", fn, flashinfer, getattr(flashinfer, "__version__", "?")), None


# ----------------------------------------------------------------------------
# layout converters (numpy or torch arrays; `xp` is numpy or torch)
# ----------------------------------------------------------------------------

def _contiguous(x):
    if hasattr(x, "contiguous"):
        return x.contiguous()
    import numpy as np
    return np.ascontiguousarray(x)


def _f32(x, xp):
    if hasattr(x, "to"):
        return x.to(xp.float32)
    return x.astype(xp.float32)


def packed_tokens(x):
    """[B, T, H, ...] -> [B*T, H, ...] (a view for contiguous torch tensors)."""
    return x.reshape((-1,) + tuple(x.shape[2:]))


def offsets_of(seqlens):
    """[L0, L1, ...] -> [0, L0, L0+L1, ...]"""
    out = [0]
    for n in seqlens:
        out.append(out[-1] + int(n))
    return out


def log_gate_to_alpha(g, xp):
    """FLA's log-decay g -> FlashInfer's linear gate alpha = exp(g), f32."""
    return _contiguous(xp.exp(_f32(g, xp)))


def state_kv_to_vk(h, xp):
    """[N, H, K, V] (FLA, FlashQLA) <-> [N, H, V, K] (FlashInfer); the same swap both ways."""
    return _contiguous(xp.swapaxes(h, -1, -2))


state_vk_to_kv = state_kv_to_vk


def expand_heads(x, hv):
    """q/k [B, T, Hqk, K] -> [B, T, Hv, K], v-head i using qk-head i // (Hv / Hqk)
    (FLA's GVA grouping)."""
    rep = hv // x.shape[2]
    if hasattr(x, "repeat_interleave"):
        return x.repeat_interleave(rep, dim=2)
    import numpy as np
    return np.repeat(x, rep, axis=2)


# ----------------------------------------------------------------------------
# adapters (torch): prepare once, then `call()` is the timed anchor call
# ----------------------------------------------------------------------------


class Prepared:
    """call(): the anchor's call alone (what is timed); to_fla(result) ->
    (o [B, T, Hv, V], final state [N, Hv, K, V] or None) for --check;
    notes: what the row should say (GVA expansion, fallbacks)."""

    def __init__(self, call, to_fla, notes, converted):
        self.call, self.to_fla, self.notes, self.converted = call, to_fla, notes, converted
        self.expanded = False


def _cu_int32(torch, inp):
    q, cu = inp["q"], inp.get("cu_seqlens")
    B, T = q.shape[0], q.shape[1]
    if cu is None:
        return torch.arange(B + 1, dtype=torch.int32, device=q.device) * T, False
    return (cu if cu.dtype == torch.int32 else cu.to(torch.int32)), True


def flashqla_forward(lib, inp, output_final_state=True, expand_qk_to=None):
    """FlashQLA's forward on the bench's inputs (FLA layout). Converted here,
    once: cu_seqlens -> int32 ([0, T] for one sequence, B = 1), beta -> f32."""
    import torch
    q, k = inp["q"], inp["k"]
    if expand_qk_to:
        q, k = expand_heads(q, expand_qk_to), expand_heads(k, expand_qk_to)
    v, g = inp["v"], inp["g"]
    beta = inp["beta"] if inp["beta"].dtype == torch.float32 else inp["beta"].float()
    h0 = inp.get("initial_state")
    converted = []
    if inp["beta"].dtype != torch.float32:
        converted.append("beta->f32")
    if q.shape[0] == 1:
        cu, given = _cu_int32(torch, inp)
        if not given:
            converted.append("cu_seqlens=[0,T] int32")
        elif inp["cu_seqlens"].dtype != torch.int32:
            converted.append("cu_seqlens->int32")
    else:
        cu = inp.get("cu_seqlens")
    scale = q.shape[-1] ** -0.5

    def call():
        return lib.fn(q, k, v, g, beta, scale=scale, initial_state=h0,
                      output_final_state=output_final_state, cu_seqlens=cu)

    def to_fla(res):
        return res[0], res[1]
    return Prepared(call, to_fla, [], converted)


def flashinfer_forward(lib, inp, output_final_state=True, expand_qk_to=None, max_seqlen_hint=True):
    """FlashInfer's GDN prefill on the bench's inputs (FLA layout). Converted
    here, once: packed [T, H, D] views of q/k/v, alpha = exp(g) f32, beta f32,
    initial state transposed to [N, Hv, V, K], int32 cu_seqlens, output and
    output_state preallocated."""
    import inspect
    import torch
    q, k = inp["q"], inp["k"]
    if expand_qk_to:
        q, k = expand_heads(q, expand_qk_to), expand_heads(k, expand_qk_to)
    v = inp["v"]
    B, T, Hqk, K = q.shape
    Hv, V = v.shape[2], v.shape[3]
    qp, kp, vp = (_contiguous(packed_tokens(x)) for x in (q, k, v))
    alpha = log_gate_to_alpha(packed_tokens(inp["g"]), torch)
    beta = _contiguous(packed_tokens(inp["beta"]).float())
    h0 = inp.get("initial_state")
    h0 = state_kv_to_vk(h0.float(), torch) if h0 is not None else None
    cu, _ = _cu_int32(torch, inp)
    N = cu.numel() - 1
    out = torch.empty(B * T, max(Hqk, Hv), V, dtype=q.dtype, device=q.device)
    ostate = torch.empty(N, max(Hqk, Hv), V, K, dtype=torch.float32, device=q.device) if output_final_state else None
    kw = {}
    converted = ["q/k/v packed [T,H,D] (views)", "g->alpha=exp(g) f32", "beta->f32",
                 "cu_seqlens int32", "output/output_state preallocated"]
    if h0 is not None:
        converted.append("h0 transposed to [N,H,V,K]")
    try:
        has_max = "max_seqlen" in inspect.signature(lib.fn).parameters
    except (TypeError, ValueError):
        has_max = False
    if max_seqlen_hint and has_max:
        lens = torch.diff(cu).tolist()  # host copy here, once, outside timing
        kw["max_seqlen"] = int(max(lens))
        converted.append(f"max_seqlen={kw['max_seqlen']}")
    scale = K ** -0.5

    def call():
        return lib.fn(q=qp, k=kp, v=vp, g=alpha, beta=beta, scale=scale, initial_state=h0,
                      output_final_state=output_final_state, cu_seqlens=cu, output=out,
                      output_state=ostate, **kw)

    def to_fla(res):
        if output_final_state:
            o, st = res
        else:
            o, st = res, None
        o = o.reshape(B, T, o.shape[-2], o.shape[-1])
        return o, (st.transpose(-1, -2) if st is not None else None)
    return Prepared(call, to_fla, [], converted)


ADAPTERS = {"flashqla": flashqla_forward, "flashinfer": flashinfer_forward}
LABELS = {"flashqla": "FlashQLA", "flashinfer": "FlashInfer"}


def prepare_forward(lib, inp, hqk, hv, output_final_state=True, **kw):
    """The anchor's Prepared call on these inputs, run once (which compiles
    it). If it raises with Hqk != Hv, q/k are repeated to Hv heads (outside
    the timed region) and the note says so."""
    import torch
    adapter = ADAPTERS[lib.name]
    prep = adapter(lib, inp, output_final_state=output_final_state, **kw)
    try:
        prep.call()
        torch.cuda.synchronize()
        return prep
    except Exception as e:  # noqa: BLE001
        if hqk == hv:
            raise
        torch.cuda.synchronize()
        note = (f"{LABELS[lib.name]} refused Hqk != Hv ({type(e).__name__}: {str(e).strip()[:100]}); "
                f"timed with q/k repeated to Hv heads (outside timing)")
    prep = adapter(lib, inp, output_final_state=output_final_state, expand_qk_to=hv, **kw)
    prep.call()
    torch.cuda.synchronize()
    prep.notes.append(note)
    prep.expanded = True
    return prep


def flashqla_autograd_fn(lib):
    """FlashQLA forward + backward through torch.autograd, with FLA's call
    signature (fn(q, k, v, g, beta, initial_state=, output_final_state=,
    cu_seqlens=)). The backward bench passes int32 cu_seqlens and f32 beta,
    which FlashQLA takes as they are, so nothing is converted inside the timed
    step; any other cu_seqlens dtype is converted here per call (a tiny copy)."""
    import torch

    def fn(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False, cu_seqlens=None):
        if cu_seqlens is not None and cu_seqlens.dtype != torch.int32:
            cu_seqlens = cu_seqlens.to(torch.int32)
        return lib.fn(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                      output_final_state=output_final_state, cu_seqlens=cu_seqlens)
    return fn


# ----------------------------------------------------------------------------
# self-tests
# ----------------------------------------------------------------------------

def _recurrence_fla(np, q, k, v, g, beta, h0, seqlens, scale):
    """float64 gated delta rule in FLA's convention: packed B = 1 inputs
    [1, T, H, D], log gate, state [N, Hv, K, V]. S <- exp(g) S;
    u = beta (v - S^T k); S <- S + k u^T; o = scale S^T q."""
    Hqk, Hv = q.shape[2], v.shape[2]
    rep = Hv // Hqk
    o = np.zeros(v.shape[1:], np.float64)
    hts = []
    for n, (s, e) in enumerate(zip(offsets_of(seqlens)[:-1], offsets_of(seqlens)[1:])):
        S = h0[n].astype(np.float64).copy()
        for t in range(s, e):
            for h in range(Hv):
                kk, qq = k[0, t, h // rep].astype(np.float64), q[0, t, h // rep].astype(np.float64)
                S[h] *= np.exp(g[0, t, h])
                u = beta[0, t, h] * (v[0, t, h] - S[h].T @ kk)
                S[h] += np.outer(kk, u)
                o[t, h] = scale * (S[h].T @ qq)
        hts.append(S)
    return o[None], np.stack(hts)


def _recurrence_flashinfer(np, q, k, v, alpha, beta, h0_vk, cu, scale):
    """The same recurrence in FlashInfer's documented convention: packed
    [T, H, D], linear gate alpha, state [N, Hv, V, K]: S <- alpha S;
    u = beta (v - S k); S <- S + u k^T; o = scale S q."""
    Hqk, Hv = q.shape[1], v.shape[1]
    rep = Hv // Hqk
    o = np.zeros(v.shape, np.float64)
    hts = []
    for n in range(len(cu) - 1):
        S = h0_vk[n].astype(np.float64).copy()
        for t in range(cu[n], cu[n + 1]):
            for h in range(Hv):
                kk, qq = k[t, h // rep].astype(np.float64), q[t, h // rep].astype(np.float64)
                S[h] *= alpha[t, h]
                u = beta[t, h] * (v[t, h] - S[h] @ kk)
                S[h] += np.outer(u, kk)
                o[t, h] = scale * (S[h] @ qq)
        hts.append(S)
    return o, np.stack(hts)


def self_test():
    """numpy only: the converters, and that FlashInfer's documented contract
    fed with the converted inputs gives FLA's o and state back."""
    import numpy as np
    rng = np.random.default_rng(0)
    seqlens, Hqk, Hv, D = [5, 3, 7], 2, 4, 8
    T, N = sum(seqlens), len(seqlens)
    q = rng.standard_normal((1, T, Hqk, D)).astype(np.float32)
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    k = rng.standard_normal((1, T, Hqk, D)).astype(np.float32)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal((1, T, Hv, D)).astype(np.float32)
    g = np.log(1 / (1 + np.exp(-rng.standard_normal((1, T, Hv))))).astype(np.float32)
    beta = (1 / (1 + np.exp(-rng.standard_normal((1, T, Hv))))).astype(np.float32)
    h0 = rng.standard_normal((N, Hv, D, D)).astype(np.float32)
    scale = D ** -0.5
    checks = []

    def ok(name, cond):
        checks.append((name, bool(cond)))

    ok("offsets", offsets_of(seqlens) == [0, 5, 8, 15])
    ok("packed shape", packed_tokens(v).shape == (T, Hv, D) and packed_tokens(g).shape == (T, Hv))
    ok("packed values", np.array_equal(packed_tokens(q)[6], q[0, 6]))
    a = log_gate_to_alpha(g, np)
    ok("alpha dtype/range", a.dtype == np.float32 and (a > 0).all() and (a <= 1).all())
    ok("alpha = exp(g)", np.allclose(np.log(a), g, atol=1e-6))
    hvk = state_kv_to_vk(h0, np)
    ok("state transposed", hvk.shape == (N, Hv, D, D) and np.array_equal(hvk[1, 2, 3, 4], h0[1, 2, 4, 3]))
    ok("state round trip", np.array_equal(state_vk_to_kv(hvk, np), h0) and hvk.flags["C_CONTIGUOUS"])
    qe = expand_heads(q, Hv)
    ok("GVA expansion", qe.shape == (1, T, Hv, D) and all(np.array_equal(qe[0, :, h], q[0, :, h // 2])
                                                         for h in range(Hv)))
    o_ref, ht_ref = _recurrence_fla(np, q, k, v, g, beta, h0, seqlens, scale)
    o_fi, ht_fi = _recurrence_flashinfer(np, packed_tokens(q), packed_tokens(k), packed_tokens(v),
                                         log_gate_to_alpha(packed_tokens(g), np),
                                         packed_tokens(beta), hvk, offsets_of(seqlens), scale)
    ok("FlashInfer contract: o (packed -> [1,T,H,V])", np.allclose(o_fi.reshape(o_ref.shape), o_ref, atol=1e-5))
    ok("FlashInfer contract: final state (transposed back)",
       np.allclose(state_vk_to_kv(ht_fi, np), ht_ref, atol=1e-5))
    o_ex, ht_ex = _recurrence_fla(np, expand_heads(q, Hv), expand_heads(k, Hv), v, g, beta, h0, seqlens, scale)
    ok("GVA expansion leaves o/state unchanged", np.allclose(o_ex, o_ref) and np.allclose(ht_ex, ht_ref))
    for name, good in checks:
        print(f"  {'ok  ' if good else 'FAIL'} {name}")
    bad = [n for n, good in checks if not good]
    print(f"self-test: {len(checks) - len(bad)}/{len(checks)} passed")
    return not bad


def gpu_smoke():
    """Both anchors on a tiny GVA varlen problem with an initial state,
    through the same adapters the benchmarks use, against a float64 torch
    recurrence (FLA's convention). Expect bf16-level differences (~1e-2)."""
    try:
        import torch
    except ImportError:
        print("SKIP gpu-smoke: no torch")
        return False
    if not torch.cuda.is_available():
        print("SKIP gpu-smoke: no GPU")
        return True
    torch.manual_seed(0)
    F = torch.nn.functional
    seqlens, Hqk, Hv = [192, 128], 2, 4
    T, N, dev = sum(seqlens), len(seqlens), "cuda"
    q = F.normalize(torch.randn(1, T, Hqk, K_DIM, device=dev), dim=-1).bfloat16()
    k = F.normalize(torch.randn(1, T, Hqk, K_DIM, device=dev), dim=-1).bfloat16()
    v = torch.randn(1, T, Hv, V_DIM, device=dev).bfloat16()
    g = F.logsigmoid(torch.randn(1, T, Hv, device=dev)) / 16
    beta = torch.sigmoid(torch.randn(1, T, Hv, device=dev))
    h0 = torch.randn(N, Hv, K_DIM, V_DIM, device=dev)
    cu = torch.tensor(offsets_of(seqlens), dtype=torch.int64, device=dev)
    inp = dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=h0, cu_seqlens=cu)
    # float64 reference, FLA's convention
    rep = Hv // Hqk
    qd, kd = (x.double()[0].repeat_interleave(rep, dim=1) for x in (q, k))
    vd, gd, bd = v.double()[0], g.double()[0], beta.double()[0]
    o_ref = torch.zeros(T, Hv, V_DIM, dtype=torch.float64, device=dev)
    hts = []
    for n in range(N):
        S = h0[n].double().clone()
        for t in range(int(cu[n]), int(cu[n + 1])):
            S *= gd[t].exp()[:, None, None]
            u = bd[t][:, None] * (vd[t] - torch.einsum("hkv,hk->hv", S, kd[t]))
            S += kd[t][:, :, None] * u[:, None, :]
            o_ref[t] = K_DIM ** -0.5 * torch.einsum("hkv,hk->hv", S, qd[t])
        hts.append(S)
    ht_ref = torch.stack(hts)

    def rel(a, b):
        return ((a.double() - b).pow(2).mean().sqrt() / b.pow(2).mean().sqrt()).item()
    good = True
    for imp in (import_flashqla, import_flashinfer):
        lib, why = imp()
        if lib is None:
            good = False
            continue
        try:
            prep = prepare_forward(lib, inp, Hqk, Hv)
            o, ht = prep.to_fla(prep.call())
            torch.cuda.synchronize()
            eo, eh = rel(o[0], o_ref), rel(ht, ht_ref)
            flag = "ok" if eo < 0.03 and eh < 0.03 else "BAD"
            good &= flag == "ok"
            print(f"  {LABELS[lib.name]} {lib.version}: o rms rel {eo:.2e}, final state {eh:.2e}  {flag}  "
                  f"(converted: {', '.join(prep.converted)}){'; ' + '; '.join(prep.notes) if prep.notes else ''}")
        except Exception as e:  # noqa: BLE001
            good = False
            print(f"  {LABELS[lib.name]}: FAILED {type(e).__name__}: {e}")
    return good


def main(argv):
    ok = self_test()
    libs = []
    for imp in (import_flashqla, import_flashinfer):
        lib, _ = imp()
        if lib is not None:
            print(f"{LABELS[lib.name]} {lib.version} importable from {lib.path}")
        libs.append(lib)
    if "--gpu-smoke" in argv:
        ok &= gpu_smoke()
    if "--probe" in argv and not all(libs):
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
