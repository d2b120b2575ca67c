"""GPU test of qla.fla: QLA as a backend of FLA's chunk_gated_delta_rule.

With qla.fla.enable(), FLA's public ``fla.ops.gated_delta_rule.
chunk_gated_delta_rule`` (its dispatch decorator, FLA's BackendRegistry)
must run calls inside QLA's contract on QLA, forward and backward (asserted
three ways: qla.fla's served counter, the "FLA chunk_gated_delta_rule -> QLA"
line on the "qla" logger, and the autograd node of o being QLA's Function),
and match FLA's Triton result on the same inputs (the backend disabled) and
the float64 reference of test_gdn_forward.py, within GDN.md's bars:
rms(out - ref) / rms(ref) <= 5e-3 for o and the final state, 8e-3 for dq, dk,
dv, dh0, 2e-2 for dg and dbeta. Calls outside the contract (K = V = 100,
float32 inputs, chunk_size=32, a bf16 initial state) must fall back to FLA's
Triton kernels (QLA's counter unchanged, the refusal's reason named, o's
autograd node FLA's) and equal FLA's result with the backend disabled.
disable() must take QLA out of FLA's registry and give FLA's dispatch back.

    PYTHONPATH=python:.fla QLA_LIBRARY=build/compiler/libqla.so python3 test/gpu/test_fla_backend.py
        [--seed N] [--filter SUBSTR] [--warm-only]

--warm-only compiles QLA's kernels of these calls into $QLA_CACHE_DIR
without torch or a GPU (as test_gdn_backward.py --warm-only does).

Environment set here before FLA is imported: FLA_FLASH_QLA=0 and
FLA_TILELANG=0 (the reference is FLA's Triton path), FLA_DISABLE_BACKEND_DISPATCH
removed (it would bypass every backend). FLA's Triton backward refuses
Triton < 3.7.1 on Hopper (FLA #640: wrong gated dqkwg); as in
fla_gdn_tests.py that guard is lifted so the fallback's backward runs, and
QLA's gradients are then checked against float64 only (FLA's Triton
gradients are still printed).

Prints SKIP and exits 0 without PyTorch, a GPU (sm_90), FLA or einops;
otherwise one PASS/FAIL line per check and "N passed, M failed", exit status
1 on any failure.
"""
import argparse
import logging
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

BARS = dict(o=5e-3, ht=5e-3, dq=8e-3, dk=8e-3, dv=8e-3, dh0=8e-3, dg=2e-2, dbeta=2e-2)
torch = None
fw = None

results = []  # (name, ok)


def record(name, ok, detail=""):
    results.append((name, ok))
    print(f"  {'PASS' if ok else 'FAIL'}  {name}" + (f"  {detail}" if detail else ""), flush=True)


class Lines(logging.Handler):
    """Collects the "qla" logger's lines."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def served(self):
        return sum(1 for m in self.lines if m.startswith("FLA chunk_gated_delta_rule -> QLA"))


# ----------------------------------------------------------------------------
# Inputs, runs, comparisons
# ----------------------------------------------------------------------------

def make_inputs(c, gen):
    F = torch.nn.functional
    dt = c["dtype"]
    dev = "cuda"
    cu = c.get("cu")
    B = 1 if cu else c["B"]
    T = cu[-1] if cu else c["T"]
    H, HV, K, V = c["H"], c["HV"], c["K"], c["V"]
    N = len(cu) - 1 if cu else B

    def rn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=gen, device=dev, dtype=torch.float32).to(dtype)

    q, k = rn(B, T, H, K), rn(B, T, H, K)
    if not c.get("l2"):
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    inp = dict(q=q.to(dt), k=k.to(dt), v=rn(B, T, HV, V, dtype=dt),
               g=F.logsigmoid(rn(B, T, HV)).to(c.get("g_dtype", torch.float32)),
               beta=rn(B, T, HV).sigmoid().to(c.get("beta_dtype", torch.float32)))
    inp["initial_state"] = rn(N, HV, K, V, dtype=c.get("h0_dtype", torch.float32)) if c.get("h0") else None
    inp["cu_seqlens"] = torch.tensor(cu, dtype=c.get("cu_dtype", torch.int64), device=dev) if cu else None
    inp["do"] = rn(B, T, HV, V, dtype=dt)
    inp["dht"] = rn(N, HV, K, V) if c.get("ht") else None
    return inp


LEAVES = ("q", "k", "v", "g", "beta", "initial_state")


def run(op, c, inp):
    """FLA's public op on fresh leaves: outputs, gradients (or None), o's autograd node's module."""
    grad = c.get("grad", True)
    leaves = {n: (inp[n].detach().clone().requires_grad_(grad) if inp[n] is not None else None) for n in LEAVES}
    kw = dict(scale=c.get("scale"), initial_state=leaves["initial_state"], output_final_state=bool(c.get("ht")),
              use_qk_l2norm_in_kernel=bool(c.get("l2")), cu_seqlens=inp["cu_seqlens"])
    kw.update(c.get("extra", {}))
    ctx = torch.enable_grad() if grad else torch.no_grad()
    with ctx:
        o, ht = op(leaves["q"], leaves["k"], leaves["v"], leaves["g"], leaves["beta"], **kw)
        node = o.grad_fn
        module = getattr(getattr(node, "_forward_cls", None), "__module__", None) if node is not None else None
        out = dict(o=o.detach(), ht=ht.detach() if ht is not None else None)
        grads = None
        if grad:
            ts, gs = [o], [inp["do"]]
            if ht is not None and inp["dht"] is not None:
                ts.append(ht)
                gs.append(inp["dht"])
            torch.autograd.backward(ts, gs)
            grads = {"d" + n if n != "initial_state" else "dh0": (leaves[n].grad if leaves[n] is not None else None)
                     for n in LEAVES}
    torch.cuda.synchronize()
    return out, grads, module


def reference64(c, inp):
    """float64 outputs and gradients through test_gdn_forward.reference (autograd)."""
    grad = c.get("grad", True)
    leaves = {n: (inp[n].detach().double().requires_grad_(grad) if inp[n] is not None else None) for n in LEAVES}
    with torch.enable_grad() if grad else torch.no_grad():
        o, ht = fw.reference(leaves["q"], leaves["k"], leaves["v"], leaves["g"], leaves["beta"], c.get("scale"),
                             leaves["initial_state"], inp["cu_seqlens"], bool(c.get("l2")))
        out = dict(o=o.detach(), ht=ht.detach() if c.get("ht") else None)
        grads = None
        if grad:
            loss = (o * inp["do"].double()).sum()
            if c.get("ht") and inp["dht"] is not None:
                loss = loss + (ht * inp["dht"].double()).sum()
            loss.backward()
            grads = {"d" + n if n != "initial_state" else "dh0": (leaves[n].grad if leaves[n] is not None else None)
                     for n in LEAVES}
    return out, grads


def errors(a_out, a_grads, b_out, b_grads):
    e = {}
    for n in ("o", "ht"):
        if a_out[n] is not None and b_out[n] is not None:
            e[n] = fw.rms_rel(a_out[n], b_out[n])
    if a_grads is not None and b_grads is not None:
        for n in ("dq", "dk", "dv", "dg", "dbeta", "dh0"):
            if a_grads[n] is not None and b_grads[n] is not None:
                e[n] = fw.rms_rel(a_grads[n], b_grads[n])
    return e


def fmt(e):
    return " ".join(f"{n} {x:.2e}" for n, x in e.items())


def over(e, names=None):
    return [n for n, x in e.items() if (names is None or n in names) and not (x <= BARS[n])]


# Calls inside QLA's contract (dtypes by name; mapped to torch's in main()).
INSIDE = [
    dict(dtype="bf16", B=2, T=333, H=4, HV=8, K=128, V=128, h0=True, ht=True),
    dict(dtype="f16", B=1, T=200, H=2, HV=2, K=64, V=64, l2=True, ht=True, scale=0.1, g_dtype="f16",
         beta_dtype="f16"),
    dict(dtype="bf16", cu=[0, 15, 64, 100, 411, 480], cu_dtype="i32", H=2, HV=4, K=128, V=128, h0=True, ht=True),
    dict(dtype="bf16", B=1, T=1000, H=4, HV=4, K=128, V=128, extra=dict(chunk_size=64)),
    dict(dtype="bf16", B=1, T=4096, H=16, HV=32, K=128, V=128, ht=True, grad=False),
]
# Calls outside it, with words the refusal must contain.
OUTSIDE = [
    (dict(dtype="bf16", B=2, T=200, H=2, HV=2, K=100, V=100, h0=True, ht=True), "K in {64, 128, 256}"),
    (dict(dtype="f32", B=1, T=200, H=2, HV=2, K=64, V=64, ht=True), "bf16 or f16, got f32"),
    (dict(dtype="bf16", B=1, T=256, H=2, HV=2, K=128, V=128, extra=dict(chunk_size=32)), "chunk_size=32"),
    (dict(dtype="f16", cu=[0, 15, 100, 300], H=2, HV=2, K=64, V=64, h0=True, h0_dtype="f16", ht=True,
          g_dtype="f16"), "f32 initial_state"),
]


def _name(d):
    return d if isinstance(d, str) else {"torch.bfloat16": "bf16", "torch.float16": "f16",
                                         "torch.float32": "f32"}.get(str(d), str(d))


def warm_only():
    """Compiles QLA's kernels of the INSIDE calls into the kernel cache (no torch, no GPU)."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import qla.gdn
    t0 = time.time()
    for c in INSIDE:
        grad = c.get("grad", True)
        qla.gdn.warmup(c["dtype"], c["K"], c["V"], beta_dtype=c.get("beta_dtype", "f32"), varlen=bool(c.get("cu")),
                       cu_dtype=c.get("cu_dtype", "i64") if c.get("cu") else None,
                       use_qk_l2norm=bool(c.get("l2")), initial_state=bool(c.get("h0")),
                       output_final_state=bool(c.get("ht")), g_dtype=c.get("g_dtype", "f32"), backward=grad,
                       dht=bool(c.get("ht")))
        print(f"  warmed {case_name(c)}", flush=True)
    print(f"warmed {len(INSIDE)} configurations in {time.time() - t0:.0f} s")
    return 0


def case_name(c):
    s = f"{_name(c['dtype'])} H{c['H']}/{c['HV']} K{c['K']} V{c['V']}"
    s += f" cu={c['cu']}" if c.get("cu") else f" B{c['B']} T{c['T']}"
    for key, label in (("h0", "h0"), ("ht", "ht"), ("l2", "l2")):
        if c.get(key):
            s += " " + label
    if c.get("extra"):
        s += " " + " ".join(f"{k}={v}" for k, v in c["extra"].items())
    s += " fwd+bwd" if c.get("grad", True) else " no_grad"
    return s


# ----------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------


def torch_on_hopper():
    """PyTorch where a Hopper (sm_90) GPU is usable, else None after printing
    the SKIP line that says why (test_real_clients.py uses it too)."""
    try:
        import torch as t
    except ImportError:
        print("SKIP: PyTorch is not installed")
        return None
    if not t.cuda.is_available():
        print("SKIP: no GPU (torch.cuda.is_available() is False)")
        return None
    cap = t.cuda.get_device_capability()
    if cap != (9, 0):
        print(f"SKIP: QLA's GDN kernels are sm_90a (Hopper); this GPU is sm_{cap[0]}{cap[1]}")
        return None
    return t


def lift_fla_triton_guard():
    """FLA refuses its gated backward on Hopper with Triton < 3.7.1 (FLA #640):
    lifts that guard so FLA's Triton path runs. True when FLA's Triton
    gradients can be trusted as they are (no guard was lifted)."""
    try:
        import fla.ops.common.chunk_o as fla_chunk_o
        import fla.utils as fla_utils
    except ImportError:
        return True
    if getattr(fla_utils, "IS_NVIDIA_HOPPER", False) and getattr(fla_utils, "TRITON_ABOVE_3_4_0", False) \
            and not getattr(fla_chunk_o, "TRITON_ABOVE_3_7_1", True):
        fla_chunk_o.TRITON_ABOVE_3_7_1 = True
        print("note: Triton < 3.7.1 on Hopper: FLA's guard on its gated backward lifted (FLA #640)")
        return False
    return True

def main():
    global torch, fw
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, help="reproduce a run (default: from the clock)")
    ap.add_argument("--filter", help="only the calls whose name contains this (the registry checks always run)")
    ap.add_argument("--warm-only", action="store_true",
                    help="only compile QLA's kernels of these calls into the kernel cache (no torch, no GPU)")
    ap.add_argument("--list", action="store_true",
                    help="print the calls' names, one per line (for --filter; scripts/fla_backend_parallel.sh)")
    args = ap.parse_args()
    if args.list:
        for c in INSIDE + [c for c, _ in OUTSIDE]:
            print(case_name(c))
        return 0
    if args.warm_only:
        return warm_only()
    torch = torch_on_hopper()
    if torch is None:
        return 0

    # Before FLA is imported: FLA's Triton path is the reference.
    os.environ["FLA_FLASH_QLA"] = "0"
    os.environ["FLA_TILELANG"] = "0"
    if os.environ.pop("FLA_DISABLE_BACKEND_DISPATCH", None) is not None:
        print("note: FLA_DISABLE_BACKEND_DISPATCH removed (it bypasses every FLA backend)")
    os.environ.pop("QLA_FLA_BACKEND", None)
    try:
        import einops  # noqa: F401
        import fla  # noqa: F401
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_op
    except ImportError as e:
        print(f"SKIP: FLA is not importable ({e}); extract it with "
              "`git -C <mirror> archive HEAD fla tests | tar -x -C .fla` and put .fla on PYTHONPATH")
        return 0
    triton_bwd_trusted = lift_fla_triton_guard()
    if not triton_bwd_trusted:
        print("  (QLA's gradients are checked against float64 only)")

    try:
        import qla
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import qla
    import qla.fla
    import test_gdn_forward as _fw
    fw = _fw
    fw.torch, fw.F = torch, torch.nn.functional
    fw.DTYPES.update(bf16=torch.bfloat16, f16=torch.float16, f32=torch.float32)

    lines = Lines()
    log = logging.getLogger("qla")
    log.addHandler(lines)
    if log.level == logging.NOTSET or log.level > logging.INFO:
        log.setLevel(logging.INFO)

    seed = args.seed if args.seed is not None else int(time.time() * 1000) % 1_000_000_007
    print(f"seed {seed}; FLA {getattr(fla, '__version__', '?')} from {os.path.dirname(fla.__file__)}; "
          f"{torch.cuda.get_device_name()}; libqla.so {qla.library_path()}")
    gen = torch.Generator(device="cuda").manual_seed(seed)

    DT = dict(bf16=torch.bfloat16, f16=torch.float16, f32=torch.float32, i32=torch.int32, i64=torch.int64)
    inside = [dict(c) for c in INSIDE if not args.filter or args.filter in case_name(c)]
    outside = [(dict(c), w) for c, w in OUTSIDE if not args.filter or args.filter in case_name(c)]
    for c in inside + [c for c, _ in outside]:
        for key in ("dtype", "g_dtype", "beta_dtype", "h0_dtype", "cu_dtype"):
            if key in c:
                c[key] = DT[c[key]]

    try:
        qla.fla.enable()
    except Exception as e:  # noqa: BLE001
        record(f"qla.fla.enable(): {type(e).__name__}: {e}", False)
        return 1
    gdr_registry = qla.fla._registry_object()  # FLA's gated_delta_rule registry (FLA 0.6 or 0.5's gdr_registry)
    impls = [b.backend_type for b in gdr_registry._get_sorted_backends() if hasattr(b, "chunk_gated_delta_rule")]
    record("enable(): 'qla' registered in FLA's gated_delta_rule registry, the first backend of "
           "chunk_gated_delta_rule",
           "qla" in gdr_registry._backends and impls[:1] == ["qla"],
           str([(b.backend_type, b.priority) for b in gdr_registry._get_sorted_backends()]))

    print("calls inside QLA's contract (enabled: QLA; disabled: FLA's Triton; and float64):")
    for c in inside:
        name = case_name(c)
        try:
            inp = make_inputs(c, gen)
            qla.fla.enable()
            n0, l0 = qla.fla.counters()["served"], lines.served()
            q_out, q_grads, q_mod = run(fla_op, c, inp)
            served = qla.fla.counters()["served"] - n0 == 1 and lines.served() - l0 == 1
            if c.get("grad", True):
                served = served and q_mod == "qla.gdn"
            qla.fla.disable()
            n1 = qla.fla.counters()["served"]
            t_out, t_grads, t_mod = run(fla_op, c, inp)
            fell_back = qla.fla.counters()["served"] == n1 and (not c.get("grad", True) or
                                                                 (t_mod or "").startswith("fla."))
            r_out, r_grads = reference64(c, inp)
            e_t = errors(q_out, q_grads, t_out, t_grads)
            e_r = errors(q_out, q_grads, r_out, r_grads)
            e_tr = errors(t_out, t_grads, r_out, r_grads)
            record(f"{name}: served by QLA (counter, log line, autograd node {q_mod})", served)
            record(f"{name}: disabled -> FLA's Triton (autograd node {t_mod})", fell_back)
            bad_t = over(e_t, None if triton_bwd_trusted else ("o", "ht"))
            record(f"{name}: QLA vs FLA Triton within the bars", not bad_t,
                   fmt(e_t) + (f"  over: {bad_t}" if bad_t else "") +
                   ("" if triton_bwd_trusted else "  (gradients vs Triton reported only)"))
            bad_r = over(e_r)
            record(f"{name}: QLA vs float64 within the bars", not bad_r,
                   fmt(e_r) + (f"  over: {bad_r}" if bad_r else "") + f"   [Triton vs float64: {fmt(e_tr)}]")
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            record(f"{name}: {type(e).__name__}: {e}", False)
            qla.fla.disable()
        torch.cuda.empty_cache()

    print("calls outside QLA's contract (enabled: must fall back to FLA's Triton):")
    qla.fla.enable()
    for c, words in outside:
        name = case_name(c)
        try:
            inp = make_inputs(c, gen)
            qla.fla.enable()
            n0, r0, l0 = qla.fla.counters()["served"], qla.fla.counters()["rejected"], lines.served()
            a_out, a_grads, a_mod = run(fla_op, c, inp)
            cnt = qla.fla.counters()
            reason = cnt["last_rejection"] or ""
            ok = (cnt["served"] == n0 and lines.served() == l0 and cnt["rejected"] > r0 and words in reason and
                  (a_mod or "").startswith("fla."))
            record(f"{name}: not served by QLA (refused: {reason!r}; autograd node {a_mod})", ok)
            qla.fla.disable()
            b_out, b_grads, _ = run(fla_op, c, inp)
            e = errors(a_out, a_grads, b_out, b_grads)
            bad = over(e)
            record(f"{name}: equals FLA with the backend disabled", not bad, fmt(e))
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            record(f"{name}: {type(e).__name__}: {e}", False)
            qla.fla.disable()

    print("disable():")
    qla.fla.enable()
    qla.fla.disable()
    c = dict(INSIDE[0])
    c["dtype"] = DT[c["dtype"]]
    inp = make_inputs(c, gen)
    n0 = qla.fla.counters()["served"]
    _, _, mod = run(fla_op, c, inp)
    record("disable(): 'qla' out of FLA's registry, a call inside the contract runs on FLA's Triton",
           "qla" not in gdr_registry._backends and qla.fla.counters()["served"] == n0 and
           (mod or "").startswith("fla."), f"registry {sorted(gdr_registry._backends)}, autograd node {mod}")
    os.environ["QLA_FLA_BACKEND"] = "0"
    qla.fla.enable()
    _, _, mod = run(fla_op, c, inp)
    record("QLA_FLA_BACKEND=0 at call time: FLA's Triton even when enabled",
           qla.fla.counters()["served"] == n0 and (mod or "").startswith("fla."), f"autograd node {mod}")
    del os.environ["QLA_FLA_BACKEND"]
    qla.fla.disable()

    # FLA's fused_recurrent_gated_delta_rule (decode) with enable(fused_recurrent=True):
    # served by QLA's decode kernel under no_grad, equal to FLA's Triton and to float64.
    if not args.filter or args.filter in "fused_recurrent decode":
        print("fused_recurrent_gated_delta_rule (decode):")
        try:
            import fla.ops.gated_delta_rule as FG
            B, T, Hqk, Hv, K, V = 4, 2, 2, 4, 128, 128
            q = torch.randn(B, T, Hqk, K, generator=gen, device="cuda").to(torch.bfloat16)
            k = torch.randn(B, T, Hqk, K, generator=gen, device="cuda").to(torch.bfloat16)
            v = torch.randn(B, T, Hv, V, generator=gen, device="cuda").to(torch.bfloat16)
            g = torch.nn.functional.logsigmoid(torch.randn(B, T, Hv, generator=gen, device="cuda"))
            beta = torch.sigmoid(torch.randn(B, T, Hv, generator=gen, device="cuda"))
            h0 = 0.1 * torch.randn(B, Hv, K, V, generator=gen, device="cuda")
            kw = dict(initial_state=h0, output_final_state=True, use_qk_l2norm_in_kernel=True)
            with torch.no_grad():
                o_f, ht_f = FG.fused_recurrent_gated_delta_rule(q, k, v, g, beta=beta, **kw)
                qla.fla.enable(fused_recurrent=True)
                n0 = qla.fla.fused_recurrent_counters()["served"]
                o_q, ht_q = FG.fused_recurrent_gated_delta_rule(q, k, v, g, beta=beta, **kw)
                served = qla.fla.fused_recurrent_counters()["served"] == n0 + 1
                qla.fla.disable()
                restored = getattr(FG.fused_recurrent_gated_delta_rule, "__qla_original__", None) is None
            o_r, ht_r = fw.reference(q, k, v, g, beta, initial_state=h0, l2norm=True)
            e = dict(o=fw.rms_rel(o_q, o_f), ht=fw.rms_rel(ht_q, ht_f), o64=fw.rms_rel(o_q, o_r),
                     ht64=fw.rms_rel(ht_q, ht_r))
            record("fused_recurrent: served by QLA (counter); disable() restores FLA's function", served and restored)
            record("fused_recurrent: QLA vs FLA Triton and vs float64 within 5e-3 (o, final state)",
                   max(e.values()) <= 5e-3, " ".join(f"{k2} {x:.2e}" for k2, x in e.items()))
        except Exception as ex:  # noqa: BLE001
            traceback.print_exc()
            record(f"fused_recurrent: {type(ex).__name__}: {ex}", False)
            qla.fla.disable()

    passed = sum(ok for _, ok in results)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
