"""Real-client tests of QLA's GDN under FLA's dispatch (issue 28, item 4).

Three clients call FLA 0.6's public ``chunk_gated_delta_rule`` as people train
with it, each with QLA enabled (``qla.fla.enable()``) and disabled (FLA's
Triton kernels) on the same seeded weights and inputs (test/gpu/README.md
has the details and how to carry FLA to the H200):

qwen       transformers' ``Qwen3_5ForCausalLM`` (else ``Qwen3NextForCausalLM``;
           printed), random bf16 weights, hidden 2048, linear heads 16 q/k and
           32 v of 128, --layers (every 4th full attention), one training step
           at B = 1, T = --seq-len. Checks: transformers bound FLA's op (not
           its torch fallback); QLA served every GDN call; the disabled step
           ran FLA's Triton GDN; loss rel. diff <= 2e-3 (half a bf16 ulp: the
           loss averages T cross-entropies); the logits and every
           parameter gradient against a third step whose GDN calls run the
           float64 reference (test_gdn_forward.reference under autograd, the
           rest of the model as in the other two): QLA's rel. RMS error <=
           max(2e-2 for the logits or --grad-bar, 1.25 x Triton's), so that gradients summed over
           all tokens (A_log, dt_bias: dg times g over 8192 tokens, where
           QLA and Triton differ by 4-7e-2 from each other) are judged by
           which side is exact, not by their difference (QLA vs Triton is
           printed); the step is faster on QLA (CUDA events, one warm-up step
           each, median of --reps), with each side's largest kernels
           (torch.profiler over one step) printed to say where time goes.
fla-layer  FLA's ``fla.layers.GatedDeltaNet`` (head_dim 128, expand_v 1, 16/32
           heads; the layer's own options: in-kernel gate with A_log/dt_bias,
           beta sigmoid, V-first state), forward + backward: output (5e-3) and
           gradients (--grad-bar) enabled vs disabled, and the call served
           by QLA (issue 28 item 2: QLA takes those options).
packed     Megatron-style: q, k L2-normalized outside, 16/32 heads, g (f32)
           and beta (bf16) from outside, int32 cu_seqlens (a 1-token
           sequence among them), no state: served by QLA, output and
           gradients vs FLA's Triton and float64 within GDN.md's bars.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 test/gpu/test_real_clients.py
        [--seq-len 8192] [--layers 4] [--reps 5] [--seed N] [--filter qwen|fla-layer|packed]
        [--grad-bar 2e-2] [--warm-only]

Before FLA is imported: FLA_FLASH_QLA=0, FLA_TILELANG=0, and
FLA_DISABLE_BACKEND_DISPATCH, QLA_FLA_BACKEND removed; FLA's guard on its
gated backward for Triton < 3.7.1 on Hopper (FLA #640) is lifted as in
test_fla_backend.py. --warm-only compiles QLA's kernels of these calls into
$QLA_CACHE_DIR (no torch, no GPU). Prints SKIP and exits 0 without PyTorch, an
sm_90 GPU, FLA (fla-core + flash-linear-attention) or transformers; else one
PASS/FAIL line per check, "N passed, M failed", exit
status 1 on any failure.
"""
import argparse
import copy
import inspect
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

LOSS_BAR = 2e-3
LOGITS_BAR = 2e-2
O_BAR = 5e-3
HIDDEN, HK, HV, DK, DV, VOCAB = 2048, 16, 32, 128, 128, 1024
TESTS = ("qwen", "fla-layer", "packed")

torch = None
fw = None       # test_gdn_forward (float64 reference, rms_rel)
fb = None       # test_fla_backend (inputs, runs, errors of one call)
qla = None
results = []    # (name, ok)


def record(name, ok, detail=""):
    results.append((name, bool(ok)))
    print(f"  {'PASS' if ok else 'FAIL'}  {name}" + (f"  {detail}" if detail else ""), flush=True)


class TritonCalls:
    """Counts FLA's Triton GDN forward and backward (the module globals that
    ChunkGatedDeltaRuleFunction calls), behaviour unchanged."""

    def __init__(self, chunk_mod):
        self.fwd = self.bwd = 0
        f, b = chunk_mod.chunk_gated_delta_rule_fwd, chunk_mod.chunk_gated_delta_rule_bwd

        def fwd(*a, **k):
            self.fwd += 1
            return f(*a, **k)

        def bwd(*a, **k):
            self.bwd += 1
            return b(*a, **k)
        chunk_mod.chunk_gated_delta_rule_fwd, chunk_mod.chunk_gated_delta_rule_bwd = fwd, bwd

    def snap(self):
        return self.fwd, self.bwd


def describe(x):
    if isinstance(x, torch.Tensor):
        s = f"{str(x.dtype)[6:]}{list(x.shape)}"
        return s if x.is_contiguous() else s + f" strides {list(x.stride())}"
    return repr(x)


def rel(a, b):
    return fw.rms_rel(a, b)


def timed_ms(fn):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e)


def grads_of(module):
    return {n: (p.grad.detach().clone() if p.grad is not None else None) for n, p in module.named_parameters()}


def compare_grads(gq, gt):
    """{name: rel RMS} over the parameters, and the names whose grads are missing on one side only."""
    errs, odd = {}, []
    for n in gt:
        a, b = gq.get(n), gt[n]
        if a is None and b is None:
            continue
        if a is None or b is None:
            odd.append(n)
            continue
        errs[n] = rel(a, b) if torch.isfinite(a).all() else float("nan")
    return errs, odd


def nan_high(v):
    return float("inf") if v != v else v


def worst(errs, prefix=""):
    """(largest rel. RMS, its parameter) among the parameters named prefix...; NaN counts as largest."""
    items = [(v, n) for n, v in errs.items() if n.startswith(prefix)]
    return max(items, key=lambda t: nan_high(t[0])) if items else (0.0, "-")


# ----------------------------------------------------------------------------
# 1. transformers' Qwen3.5 causal LM, one training step
# ----------------------------------------------------------------------------

def qwen_classes():
    """(modeling module, model class, config class) of the first Qwen with GDN layers that exists."""
    import importlib
    for mod_name, model, cfg in (("transformers.models.qwen3_5.modeling_qwen3_5", "Qwen3_5ForCausalLM",
                                  "Qwen3_5TextConfig"),
                                 ("transformers.models.qwen3_next.modeling_qwen3_next", "Qwen3NextForCausalLM",
                                  "Qwen3NextConfig")):
        try:
            mod = importlib.import_module(mod_name)
        except ImportError:
            continue
        if hasattr(mod, model) and hasattr(mod, cfg):
            return mod, getattr(mod, model), getattr(mod, cfg)
    raise ImportError("this transformers has neither Qwen3_5ForCausalLM nor Qwen3NextForCausalLM")


def qwen_config(cfg_cls, args):
    L = args.layers
    types = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(L)]
    kw = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=4096, num_hidden_layers=L,
              num_attention_heads=8, num_key_value_heads=2, head_dim=256, linear_num_key_heads=HK,
              linear_num_value_heads=HV, linear_key_head_dim=DK, linear_value_head_dim=DV, layer_types=types,
              max_position_embeddings=max(32768, args.seq_len), tie_word_embeddings=False, use_cache=False)
    if "Next" in cfg_cls.__name__:  # dense MLPs everywhere: the GDN is what is tested
        kw.update(mlp_only_layers=list(range(L)), num_experts=4, num_experts_per_tok=2)
    return cfg_cls(**kw)


def bound_implementation(fn):
    """What transformers' decorator bound in place of its torch fallback (its closure's `implementation`)."""
    try:
        return inspect.getclosurevars(fn).nonlocals.get("implementation")
    except (TypeError, ValueError):
        return None


def test_qwen(args, fla_op, calls, triton_bwd_trusted):
    import transformers
    mod, model_cls, cfg_cls = qwen_classes()
    config = qwen_config(cfg_cls, args)
    gdn_layers = [i for i, t in enumerate(config.layer_types) if t == "linear_attention"]
    T = args.seq_len

    gdn_fn = getattr(mod, "torch_chunk_gated_delta_rule", None)
    impl = bound_implementation(gdn_fn) if gdn_fn is not None else None
    name = f"{getattr(impl, '__module__', '?')}.{getattr(impl, '__name__', '?')}" if impl is not None else "?"
    if impl is None:  # another decorator in between: the served counter below decides
        print(f"  note: could not read what transformers bound to its torch_chunk_gated_delta_rule ({gdn_fn!r})")
    else:
        record("transformers bound FLA's public chunk_gated_delta_rule (not its torch fallback)", impl is fla_op,
               f"bound: {name}" + ("" if impl is fla_op else
                                   "  (FLA must be importable when transformers imports the modeling module)"))

    torch.manual_seed(args.seed)
    model_t = model_cls(config).to(device="cuda", dtype=torch.bfloat16).train()
    model_q = copy.deepcopy(model_t)
    model_r = copy.deepcopy(model_t)  # GDN in float64: the arbiter of the gradients
    print(f"transformers {transformers.__version__}: {model_cls.__module__}.{model_cls.__name__}, "
          f"{config.num_hidden_layers} layers {config.layer_types}, hidden {HIDDEN}, linear heads {HK}/{HV} of "
          f"{DK}/{DV}, vocab {VOCAB}, bf16, B=1 T={T}, attention "
          f"{getattr(model_t.config, '_attn_implementation', '?')}, "
          f"{sum(p.numel() for p in model_t.parameters()) / 1e6:.0f}M parameters")
    ids = torch.randint(0, VOCAB, (1, T), generator=torch.Generator().manual_seed(args.seed)).cuda()

    def step(model):
        for p in model.parameters():
            p.grad = None
        out = model(input_ids=ids, labels=ids, use_cache=False)
        out.loss.backward()
        return out.loss.detach().float(), out.logits.detach()

    # How the model calls FLA: the first call's arguments (a pass-through wrapper of the module global).
    seen = []

    params = inspect.signature(fla_op).parameters  # transformers passes FLA only these keywords

    def spy(*a, **k):
        if not seen:
            seen.append(", ".join([describe(x) for x in a] + [f"{n}={describe(x)}" for n, x in k.items()]))
            seen.append([n for n in k if n not in params])
        return gdn_fn(*a, **k)

    qla.fla.enable()
    c0, f0 = qla.fla.counters(), calls.snap()
    if gdn_fn is not None:
        mod.torch_chunk_gated_delta_rule = spy
    try:
        loss_q, logits_q = step(model_q)
    finally:
        if gdn_fn is not None:
            mod.torch_chunk_gated_delta_rule = gdn_fn
    torch.cuda.synchronize()
    c1, f1 = qla.fla.counters(), calls.snap()
    print(f"  the model's GDN call: torch_chunk_gated_delta_rule({seen[0] if seen else '?'})"
          + (f"; not passed on to FLA: {seen[1]}" if seen and seen[1] else ""))
    served, rejected = c1["served"] - c0["served"], c1["rejected"] - c0["rejected"]
    detail = (f"served {served} of {len(gdn_layers)} GDN layers, rejected {rejected}, "
              f"Triton GDN forwards {f1[0] - f0[0]}")
    if rejected:
        detail += f"; last refusal: {c1['last_rejection']!r}"
    if served == 0 and rejected == 0:
        detail += "; FLA's dispatch never asked QLA: the model did not call FLA's chunk_gated_delta_rule"
    record("QLA enabled: every GDN call of the step served by QLA",
           served == len(gdn_layers) and rejected == 0 and f1[0] == f0[0], detail)
    gq = grads_of(model_q)

    qla.fla.disable()
    loss_t, logits_t = step(model_t)
    torch.cuda.synchronize()
    f2 = calls.snap()
    record("QLA disabled: the step ran FLA's Triton GDN forward and backward",
           f2[0] - f1[0] == len(gdn_layers) and f2[1] - f1[1] == len(gdn_layers),
           f"Triton forwards {f2[0] - f1[0]}, backwards {f2[1] - f1[1]}")
    gt = grads_of(model_t)

    d = abs(loss_q.item() - loss_t.item()) / abs(loss_t.item())
    record(f"loss matches (rel. diff <= {LOSS_BAR:g})", bool(torch.isfinite(loss_q)) and d <= LOSS_BAR,
           f"QLA {loss_q.item():.6f} Triton {loss_t.item():.6f} rel {d:.2e}")
    e_qt = rel(logits_q, logits_t)

    errs, odd = compare_grads(gq, gt)
    top = sorted(errs.items(), key=lambda t: -nan_high(t[1]))[:5]
    print("  largest gradient differences QLA vs Triton: " + ", ".join(f"{n} {v:.2e}" for n, v in top))

    # The arbiter: the same step with every GDN call in float64 (bf16 out, as the op returns).
    ref_calls = []

    def gdn64(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
              use_qk_l2norm_in_kernel=False, cu_seqlens=None, **_):
        ref_calls.append(1)
        o, ht = fw.reference(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                             cu_seqlens=cu_seqlens, l2norm=use_qk_l2norm_in_kernel)
        return o.to(v.dtype), (ht.float() if output_final_state else None)

    if gdn_fn is None:
        record("float64 arbiter step (transformers' torch_chunk_gated_delta_rule not found)", False)
        return
    mod.torch_chunk_gated_delta_rule = gdn64
    try:
        loss_r, logits_r = step(model_r)
    finally:
        mod.torch_chunk_gated_delta_rule = gdn_fn
    torch.cuda.synchronize()
    gr = grads_of(model_r)
    del model_r
    torch.cuda.empty_cache()
    eq, oddq = compare_grads(gq, gr)
    et, oddt = compare_grads(gt, gr)
    print(f"  float64 arbiter: {len(ref_calls)} GDN calls in float64, loss {loss_r.item():.6f} "
          f"(QLA {abs(loss_q.item() - loss_r.item()) / abs(loss_r.item()):.1e}, "
          f"Triton {abs(loss_t.item() - loss_r.item()) / abs(loss_r.item()):.1e} rel.)")
    elq, elt = rel(logits_q, logits_r), rel(logits_t, logits_r)
    record(f"logits as exact as Triton's (rel. RMS vs float64 GDN <= max({LOGITS_BAR:g}, 1.25 x Triton's))",
           elq <= max(LOGITS_BAR, 1.25 * elt), f"QLA {elq:.2e}, Triton {elt:.2e}; QLA vs Triton {e_qt:.2e}")
    bars = {n: max(args.grad_bar, 1.25 * et.get(n, 0.0)) for n in eq}
    bad = sorted((n for n, v in eq.items() if not v <= bars[n]), key=lambda n: -nan_high(eq[n]))
    top = sorted(eq.items(), key=lambda t: -nan_high(t[1]))[:5]
    print("  largest gradient errors vs float64 GDN, QLA [Triton]: "
          + ", ".join(f"{n} {v:.2e} [{et.get(n, float('nan')):.2e}]" for n, v in top))
    for i in gdn_layers:
        lw, ln = worst(eq, f"model.layers.{i}.linear_attn.")
        print(f"  GDN layer {i}: worst linear_attn gradient vs float64 {ln} QLA {lw:.2e} "
              f"Triton {et.get(ln, float('nan')):.2e}")
    w, wn = worst(eq)
    odd = sorted(set(odd) | set(oddq) | set(oddt))
    record(f"every parameter gradient as exact as Triton's (rel. RMS vs float64 GDN <= max({args.grad_bar:g}, "
           f"1.25 x Triton's), {len(eq)} tensors)", not bad and not odd,
           f"worst {wn} {w:.2e} (Triton {et.get(wn, float('nan')):.2e})"
           + (f"; over: {[(n, round(eq[n], 4), round(et.get(n, 0.0), 4)) for n in bad[:6]]}" if bad else "")
           + (f"; grad on one side only: {odd}" if odd else "")
           + ("" if triton_bwd_trusted else "  (FLA's backward runs past its #640 guard)"))

    tq, tt = [], []
    for _ in range(args.reps):  # alternating, after the warm-up steps above
        qla.fla.enable()
        tq.append(timed_ms(lambda: step(model_q)))
        qla.fla.disable()
        tt.append(timed_ms(lambda: step(model_t)))
    mq, mt = statistics.median(tq), statistics.median(tt)
    # Where each step's time goes: its largest kernels over one step (torch.profiler).
    from torch.profiler import ProfilerActivity, profile
    for side, model, on in (("QLA", model_q, True), ("Triton", model_t, False)):
        (qla.fla.enable if on else qla.fla.disable)()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step(model)
            torch.cuda.synchronize()
        rows = sorted(prof.key_averages(), key=lambda e: -e.device_time_total)
        tot = sum(e.device_time_total for e in rows) / 1000
        gdn = sum(e.device_time_total for e in rows if "gdn" in e.key.lower() or "delta" in e.key.lower()
                  or e.key.startswith("qla_")) / 1000
        print(f"  {side} step: {tot:.1f} ms of kernels, {gdn:.1f} ms in kernels named qla_*/*gdn*/*delta*; largest: "
              + "; ".join(f"{e.key[:48]} {e.device_time_total / 1000:.2f} ms x{e.count}" for e in rows[:8]))
    qla.fla.disable()
    record("the training step is faster on QLA than on FLA's Triton", mq < mt,
           f"QLA {mq:.1f} ms, Triton {mt:.1f} ms (median of {args.reps}), Triton/QLA {mt / mq:.3f}x; "
           f"QLA {[round(x, 1) for x in tq]}, Triton {[round(x, 1) for x in tt]}")


# ----------------------------------------------------------------------------
# 2. FLA's own GatedDeltaNet layer
# ----------------------------------------------------------------------------

def test_fla_layer(args, calls):
    import fla.layers.gated_deltanet as layer_mod
    T = args.seq_len
    torch.manual_seed(args.seed)
    layer_t = layer_mod.GatedDeltaNet(hidden_size=HIDDEN, head_dim=DK, expand_v=DV / DK, num_heads=HK,
                                      num_v_heads=HV, mode="chunk", layer_idx=0)
    layer_t = layer_t.to(device="cuda", dtype=torch.bfloat16).train()
    layer_q = copy.deepcopy(layer_t)
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    x = torch.randn(1, T, HIDDEN, device="cuda", generator=gen).to(torch.bfloat16)
    do = torch.randn(1, T, HIDDEN, device="cuda", generator=gen).to(torch.bfloat16)
    print(f"fla.layers.GatedDeltaNet(hidden_size={HIDDEN}, head_dim={DK}, expand_v={DV / DK:g}, num_heads={HK}, "
          f"num_v_heads={HV}) bf16, B=1 T={T} (the constructor's head_dim 256 / expand_v 2 give V = 512, outside "
          f"the head dims QLA plans)")

    op = layer_mod.chunk_gated_delta_rule
    seen = []

    def spy(*a, **k):
        if not seen:
            seen.append(", ".join([describe(x) for x in a] + [f"{n}={describe(v)}" for n, v in k.items()]))
        return op(*a, **k)

    def run(layer):
        xi = x.clone().requires_grad_(True)
        o = layer(xi)[0]
        o.backward(do)
        torch.cuda.synchronize()
        return o.detach(), xi.grad, grads_of(layer)

    qla.fla.enable()
    c0, f0 = qla.fla.counters(), calls.snap()
    layer_mod.chunk_gated_delta_rule = spy
    try:
        oq, dxq, gq = run(layer_q)
    finally:
        layer_mod.chunk_gated_delta_rule = op
    c1, f1 = qla.fla.counters(), calls.snap()
    print(f"  the layer's call: chunk_gated_delta_rule({seen[0] if seen else '?'})")
    qla.fla.disable()
    ot, dxt, gt = run(layer_t)
    f2 = calls.snap()
    record("QLA disabled: the layer ran FLA's Triton GDN forward and backward",
           f2[0] - f1[0] == 1 and f2[1] - f1[1] == 1, f"Triton forwards {f2[0] - f1[0]}, backwards {f2[1] - f1[1]}")
    eo, edx = rel(oq, ot), rel(dxq, dxt)
    errs, odd = compare_grads(gq, gt)
    w, wn = worst(errs)
    ok = eo <= O_BAR and edx <= args.grad_bar and w <= args.grad_bar and not odd
    served, rejected = c1["served"] - c0["served"], c1["rejected"] - c0["rejected"]
    on = "QLA" if served else "FLA's Triton (QLA refused)"
    record(f"QLA enabled ({on}) vs disabled: output and gradients within the bars (o {O_BAR:g}, grads "
           f"{args.grad_bar:g})", ok, f"o {eo:.2e} dx {edx:.2e} worst parameter {wn} {w:.2e}" +
           (f"; grad on one side only: {odd}" if odd else ""))
    reason = (f"served {served}, rejected {rejected}; QLA's refusal: {c1['last_rejection']!r}" if not served else
              f"served {served}, Triton GDN forwards {f1[0] - f0[0]}")
    record("served by QLA (the in-kernel gate, beta sigmoid, V-first states: issue 28 item 2)",
           served == 1 and rejected == 0 and f1[0] == f0[0], reason)
    del layer_q, layer_t


# ----------------------------------------------------------------------------
# 3. Megatron-style packed call
# ----------------------------------------------------------------------------

def packed_lengths(T):
    base = [1, 63, 65, 1000]
    if T > sum(base) + 64:
        return base + [T - sum(base)]
    return [1, 63, max(T - 64, 1)]


def test_packed(args, fla_op, calls, triton_bwd_trusted):
    lens = packed_lengths(args.seq_len)
    cu = [0]
    for n in lens:
        cu.append(cu[-1] + n)
    c = dict(dtype=torch.bfloat16, cu=cu, cu_dtype=torch.int32, H=HK, HV=HV, K=DK, V=DV, beta_dtype=torch.bfloat16)
    print(f"packed: bf16 q/k {HK} heads L2-normalized outside, v {HV} heads, g f32, beta bf16, int32 cu_seqlens of "
          f"lengths {lens}, no state, fwd+bwd")
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    inp = fb.make_inputs(c, gen)
    qla.fla.enable()
    c0, f0 = qla.fla.counters(), calls.snap()
    q_out, q_grads, q_mod = fb.run(fla_op, c, inp)
    c1, f1 = qla.fla.counters(), calls.snap()
    qla.fla.disable()
    t_out, t_grads, t_mod = fb.run(fla_op, c, inp)
    r_out, r_grads = fb.reference64(c, inp)
    served = c1["served"] - c0["served"] == 1 and q_mod == "qla.gdn" and f1[0] == f0[0]
    record("served by QLA (counter, autograd node, no Triton forward)", served,
           f"autograd node {q_mod}" + (f"; last refusal {c1['last_rejection']!r}" if not served else ""))
    record("disabled: FLA's Triton", (t_mod or "").startswith("fla."), f"autograd node {t_mod}")
    e_t = fb.errors(q_out, q_grads, t_out, t_grads)
    e_r = fb.errors(q_out, q_grads, r_out, r_grads)
    e_tr = fb.errors(t_out, t_grads, r_out, r_grads)
    bad_t = fb.over(e_t, None if triton_bwd_trusted else ("o",))
    record("QLA vs FLA Triton within GDN.md's bars", not bad_t, fb.fmt(e_t) + (f"  over: {bad_t}" if bad_t else "") +
           ("" if triton_bwd_trusted else "  (gradients vs Triton reported only: FLA #640)"))
    bad_r = fb.over(e_r)
    record("QLA vs float64 within GDN.md's bars", not bad_r,
           fb.fmt(e_r) + (f"  over: {bad_r}" if bad_r else "") + f"   [Triton vs float64: {fb.fmt(e_tr)}]")


# ----------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------

def warm_only(args):
    """Compiles QLA's kernels of the qwen and packed calls into the kernel cache (no torch, no GPU)."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import qla.gdn
    t0 = time.time()
    todo = []
    if not args.filter or args.filter in "qwen":  # the test's name contains the filter
        todo.append(("qwen", dict(use_qk_l2norm=True)))
    if not args.filter or args.filter in "packed":
        todo.append(("packed", dict(varlen=True, cu_dtype="i32")))
    # FLA's GatedDeltaNet layer: g (the raw gate) in bf16, the gate, beta's sigmoid and the L2 norm in the kernel.
    layer = dict(use_qk_l2norm=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True, state_v_first=True)
    if not args.filter or args.filter in "fla-layer":
        todo.append(("fla-layer", dict(layer, g_dtype="bf16")))
    for name, kw in todo:
        kw = dict(kw)
        g_dtype = kw.pop("g_dtype", "f32")
        qla.gdn.warmup("bf16", DK, DV, beta_dtype="bf16", g_dtype=g_dtype, backward=True, **kw)
        print(f"  warmed {name}: bf16 K{DK} V{DV} g {g_dtype} beta bf16 {kw} fwd+bwd", flush=True)
    print(f"warmed {len(todo)} configurations in {time.time() - t0:.0f} s")
    return 0


def main():
    global torch, fw, fb, qla
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seq-len", type=int, default=8192, help="tokens per step/call (default 8192)")
    ap.add_argument("--layers", type=int, default=4, help="Qwen decoder layers, every 4th full attention (default 4)")
    ap.add_argument("--reps", type=int, default=5, help="timed Qwen steps per side (default 5)")
    ap.add_argument("--seed", type=int, help="weights and inputs (default: from the clock, printed)")
    ap.add_argument("--filter", help=f"only the tests whose name contains this ({', '.join(TESTS)})")
    ap.add_argument("--grad-bar", type=float, default=2e-2, help="rel. RMS bar of each model gradient (2e-2)")
    ap.add_argument("--warm-only", action="store_true", help="only compile QLA's kernels (no torch, no GPU)")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = int(time.time() * 1000) % 1_000_000_007
    if args.warm_only:
        return warm_only(args)
    tests = [t for t in TESTS if not args.filter or args.filter in t]
    import test_fla_backend as _fb0
    torch = _fb0.torch_on_hopper()
    if torch is None:
        return 0

    # Before FLA (and transformers' modeling modules, which bind FLA's op when imported) are imported.
    os.environ["FLA_FLASH_QLA"] = "0"
    os.environ["FLA_TILELANG"] = "0"
    for v in ("FLA_DISABLE_BACKEND_DISPATCH", "QLA_FLA_BACKEND"):
        if os.environ.pop(v, None) is not None:
            print(f"note: {v} removed")
    try:
        import einops  # noqa: F401
        import fla
        import fla.ops.gated_delta_rule.chunk as fla_chunk
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_op
        import fla.layers.gated_deltanet  # noqa: F401  (the flash-linear-attention wheel; needs transformers)
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"SKIP: FLA (fla-core and flash-linear-attention 0.6) or transformers is not importable ({e}); "
              "see test/gpu/README.md for carrying the wheels")
        return 0
    triton_bwd_trusted = _fb0.lift_fla_triton_guard()

    try:
        import qla as _qla
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import qla as _qla
    import qla.fla  # noqa: F401
    import test_fla_backend as _fb
    import test_gdn_forward as _fw
    qla, fw, fb = _qla, _fw, _fb
    fw.torch, fw.F = torch, torch.nn.functional
    fw.DTYPES.update(bf16=torch.bfloat16, f16=torch.float16, f32=torch.float32)
    fb.torch, fb.fw = torch, fw
    calls = TritonCalls(fla_chunk)
    import triton
    print(f"seed {args.seed}; FLA {getattr(fla, '__version__', '?')} from {os.path.dirname(fla.__file__)}; "
          f"transformers {transformers.__version__}; torch {torch.__version__}; triton {triton.__version__}; "
          f"{torch.cuda.get_device_name()}; libqla.so {qla.library_path()}")
    import importlib.util
    if importlib.util.find_spec("fla.backends") is None:
        print("note: this FLA has no fla.backends (FLA < 0.6): the tests run against its fla.ops.backends")

    for name, fn in (("qwen", lambda: test_qwen(args, fla_op, calls, triton_bwd_trusted)),
                     ("fla-layer", lambda: test_fla_layer(args, calls)),
                     ("packed", lambda: test_packed(args, fla_op, calls, triton_bwd_trusted))):
        if name not in tests:
            continue
        print(f"== {name}", flush=True)
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            record(f"{name}: {type(e).__name__}: {e}", False)
        finally:
            qla.fla.disable()
            torch.cuda.empty_cache()

    passed = sum(ok for _, ok in results)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
