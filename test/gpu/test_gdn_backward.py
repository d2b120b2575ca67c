"""GPU conformance suite of the GDN backward: qla.chunk_gated_delta_rule under
torch.autograd (FLA's chunk_gated_delta_rule contract, GDN.md's bars).

Every run draws fresh random inputs (seed from the clock, printed; --seed
reproduces a run). The reference is torch float64 autograd through the
chunked float64 form of test_gdn_forward.py (itself checked against the
token-by-token recurrence there), with L = <do, o> + <dht, final_state>.
Metric per gradient: rms(out - ref) / rms(ref); bars: dq, dk, dv, dh0 <= 0.008,
dbeta, dg <= 0.02. The caching allocator is seeded with NaN-filled blocks of
the gradients' sizes before each call, so a gradient element the operator
never writes is likely to show up as NaN (checked: no NaN/Inf). Also: 100
repeated backward calls on the same inputs are bitwise identical; forward +
backward captured in one CUDA graph and replayed on new data equals eager
calls; bad gradient inputs raise an error naming the problem.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 test/gpu/test_gdn_backward.py
        [--seed N] [--filter SUBSTR] [--no-large] [--verbose] [--fused | --six]

The backward's default is the fused gradient kernel
(kernels/gdn/gdn_bwd_fused.qla): it takes every case with K and V up to
128 (bf16 with hi + lo pairs; 256 stays on the six kernels), with its own
state-gradient segments where heads are few; a last check says that it ran
(QLA's log names gdn_bwd_fused when it is compiled or loaded, and gives the
backward's schedule). --fused sets QLA_GDN_BWD_FUSED=1 (the same path, said
explicitly); --six runs the suite on the six kernels (QLA_GDN_BWD_FUSED=0:
dh, dqk and wy in its place) and skips that check.

Prints SKIP and exits 0 without PyTorch or a GPU; otherwise a table and
"N passed, M failed", exit status 1 on any failure.
"""
import argparse
import math
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import test_gdn_forward as fw  # noqa: E402  (the float64 reference and the input generator)

BARS = dict(dq=8e-3, dk=8e-3, dv=8e-3, dh0=8e-3, dbeta=2e-2, dg=2e-2)
FUSED = True  # the fused gradient kernel takes the cases it can (--six: the six kernels)


NAMES = ["dq", "dk", "dv", "dg", "dbeta", "dh0"]
torch = None


def grads_ref(case, inp, do, dht):
    """float64 autograd gradients of L = <do, o> + <dht, ht> through the reference."""
    leaves = {n: inp[n].detach().double().requires_grad_() for n in ("q", "k", "v", "g", "beta")}
    h0 = inp["initial_state"]
    if h0 is not None:
        leaves["initial_state"] = h0.detach().double().requires_grad_()
    o, ht = fw.reference(leaves["q"], leaves["k"], leaves["v"], leaves["g"], leaves["beta"], case.get("scale"),
                         leaves.get("initial_state"), inp["cu_seqlens"], case.get("l2", False))
    loss = (o * do.double()).sum()
    if dht is not None:
        loss = loss + (ht * dht.double()).sum()
    loss.backward()
    out = {"d" + n: leaves[n].grad for n in ("q", "k", "v", "g", "beta")}
    if h0 is not None:
        out["dh0"] = leaves["initial_state"].grad
    return out


def grads_qla(fn, case, inp, do, dht):
    """The operator's gradients through autograd (leaves cloned from the inputs)."""
    leaves = {n: inp[n].detach().clone().requires_grad_() for n in ("q", "k", "v", "g", "beta")}
    h0 = inp["initial_state"]
    if h0 is not None:
        leaves["initial_state"] = h0.detach().clone().requires_grad_()
    o, ht = fn(leaves["q"], leaves["k"], leaves["v"], leaves["g"], leaves["beta"], scale=case.get("scale"),
               initial_state=leaves.get("initial_state"), output_final_state=dht is not None,
               cu_seqlens=inp["cu_seqlens"], use_qk_l2norm_in_kernel=case.get("l2", False),
               segment_chunks=case.get("seg", 0))
    nb = [t.numel() * t.element_size() for t in leaves.values()]
    fw.poison_allocator(*(nb + nb))
    ts, gs = [o], [do]
    if dht is not None:
        ts.append(ht)
        gs.append(dht)
    torch.autograd.backward(ts, gs)
    out = {"d" + n: leaves[n].grad for n in ("q", "k", "v", "g", "beta")}
    if h0 is not None:
        out["dh0"] = leaves["initial_state"].grad
    return out, leaves


def make_case_inputs(case, gen):
    inp = fw.make_inputs(case, gen)
    g_dt = case.get("g")
    if g_dt:
        inp["g"] = inp["g"].to(fw.DTYPES[g_dt])
    dt = fw.DTYPES[case["dtype"]]
    do = torch.randn(inp["B"], inp["T"], case["Hv"], case["V"], device="cuda", generator=gen).to(dt)
    dht = (torch.randn(inp["N"], case["Hv"], case["K"], case["V"], device="cuda", generator=gen)
           if case.get("dht") else None)
    return inp, do, dht


def run_case(fn, case, gen):
    inp, do, dht = make_case_inputs(case, gen)
    got, leaves = grads_qla(fn, case, inp, do, dht)
    torch.cuda.synchronize()
    ref = grads_ref(case, inp, do, dht)
    errs, notes, ok = {}, [], True
    for n, r in ref.items():
        x = got.get(n)
        if x is None:
            ok = False
            notes.append(f"{n} missing")
            continue
        src = leaves["initial_state" if n == "dh0" else n[1:]]
        if x.dtype != src.dtype or x.shape != src.shape:
            ok = False
            notes.append(f"{n} is {x.dtype} {tuple(x.shape)}, expected {src.dtype} {tuple(src.shape)}")
        if not torch.isfinite(x).all():
            ok = False
            notes.append(f"{n} has {int((~torch.isfinite(x)).sum())} NaN/Inf")
        errs[n] = fw.rms_rel(x, r)
        if not errs[n] <= BARS[n]:
            ok = False
            notes.append(f"{n} over {BARS[n]}")
    return ok, errs, "; ".join(notes)


def build_cases():
    cases = []

    def C(**kw):
        c = dict(Hqk=2, Hv=4, K=128, V=128, dtype="bf16")
        c.update(kw)
        c.setdefault("B", 1)
        return c

    for T in (1, 63, 64, 65, 333, 1000):
        cases.append(C(B=2, T=T, h0=T % 2 == 1, dht=T >= 64))
    cases.append(C(B=1, T=4096, Hqk=1, Hv=2, h0=True, dht=True))
    cases.append(C(B=2, T=1000, gates="harsh", h0=True, dht=True))
    cases.append(C(B=1, T=333, Hqk=1, Hv=4, gates="harsh"))
    L = [1, 15, 64, 100, 411, 1500]
    cases.append(C(lens=L, h0=True, dht=True))
    cases.append(C(lens=L, cu_dtype="i64", gates="harsh", l2=True))
    cases.append(C(lens=[1, 1, 2, 63, 1], Hqk=1, Hv=3, h0=True, dht=True))
    cases.append(C(lens=[64, 1, 129, 0, 70], h0=True, dht=True, seg=1))  # an empty sequence, 1-chunk segments
    cases.append(C(lens=[0, 100, 0], h0=True, dht=True))
    for grp in (1, 2, 3, 4):
        cases.append(C(B=1, T=200, Hqk=2, Hv=2 * grp, h0=grp % 2 == 0, dht=grp > 2, l2=grp == 3))
    cases.append(C(B=2, T=333, l2=True, h0=True, dht=True))
    cases.append(C(B=2, T=200, dtype="f16", h0=True, dht=True))
    cases.append(C(B=2, T=130, K=64, V=64, h0=True, dht=True))
    cases.append(C(B=1, T=200, K=64, V=128, l2=True))
    cases.append(C(B=1, T=200, K=128, V=64, gates="harsh", dht=True))
    # V = 256 (dqk in two parts of V; the fused gradient kernel takes V up to 128)
    cases.append(C(B=2, T=333, K=128, V=256, h0=True, dht=True))
    cases.append(C(B=1, T=200, Hqk=1, Hv=2, K=64, V=256, l2=True))
    # K = 256 (dqk in two parts of K; no split, no fused gradient kernel)
    cases.append(C(B=2, T=333, K=256, V=128, h0=True, dht=True))
    cases.append(C(lens=[1, 64, 200], K=256, V=256, l2=True, h0=True))
    cases.append(C(B=2, T=200, g="bf16", beta="bf16", h0=True, dht=True))
    cases.append(C(B=2, T=200, dtype="f16", g="f16", beta="f16"))
    # the states' recompute with context parallelism (segments of 2 chunks)
    cases.append(C(B=1, T=1000, h0=True, dht=True, seg=2))
    cases.append(C(lens=L, h0=True, gates="harsh", seg=3))
    cases.append(C(B=1, T=32768, Hqk=4, Hv=16, h0=True, dht=True, gates="harsh", large=True))
    return cases


def case_name(c):
    parts = [f"lens={c['lens']}" if c.get("lens") else f"{c['B']}x{c['T']}",
             f"{c['Hqk']}/{c['Hv']}", f"K{c['K']}V{c['V']}", c["dtype"]]
    for key, label in (("h0", "h0"), ("dht", "dht"), ("l2", "l2")):
        if c.get(key):
            parts.append(label)
    if c.get("gates") == "harsh":
        parts.append("harsh-g")
    if c.get("g"):
        parts.append(f"g={c['g']}")
    if c.get("beta"):
        parts.append(f"beta={c['beta']}")
    if c.get("cu_dtype") == "i64":
        parts.append("cu=i64")
    if c.get("seg"):
        parts.append(f"seg={c['seg']}")
    return " ".join(parts)


def run_repeat(fn, gen, n=100):
    """n backward calls on the same inputs and the same do: bitwise equal."""
    case = dict(B=1, T=1000, Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True, dht=True, seg=2)
    inp, do, dht = make_case_inputs(case, gen)
    first, _ = grads_qla(fn, case, inp, do, dht)
    for i in range(n - 1):
        again, _ = grads_qla(fn, case, inp, do, dht)
        for k, x in first.items():
            if not torch.equal(x, again[k]):
                return False, f"call {i + 2}: {k} differs"
    return True, f"{n} calls bitwise identical"


def run_graph(fn, gen):
    """Forward + backward captured in one CUDA graph (no host sync inside),
    replayed on new data in the same buffers, equals eager calls."""
    case = dict(lens=[1, 15, 64, 100, 411, 1500], Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True, dht=True,
                B=1)
    inp, do, dht = make_case_inputs(case, gen)
    leaves = {n: inp[n].detach().clone().requires_grad_() for n in ("q", "k", "v", "g", "beta", "initial_state")}

    def step():
        for x in leaves.values():
            x.grad = None
        o, ht = fn(leaves["q"], leaves["k"], leaves["v"], leaves["g"], leaves["beta"],
                   initial_state=leaves["initial_state"], output_final_state=True, cu_seqlens=inp["cu_seqlens"])
        torch.autograd.backward([o, ht], [do, dht])
        return [o.detach()] + [leaves[n].grad for n in ("q", "k", "v", "g", "beta", "initial_state")]

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = step()
    fresh, do2, dht2 = make_case_inputs(case, gen)
    with torch.no_grad():
        for n in ("q", "k", "v", "g", "beta", "initial_state"):
            leaves[n].copy_(fresh[n])
        do.copy_(do2)
        dht.copy_(dht2)
    graph.replay()
    torch.cuda.synchronize()
    replay = [x.clone() for x in outs]
    eager = step()
    torch.cuda.synchronize()
    worst = max(fw.rms_rel(a, b) for a, b in zip(replay, eager))
    return worst <= 1e-6, worst


def run_checkpoints(fn, gen):
    """Training mode: where the forward splits, it keeps its segment start
    states (checkpoints) for the backward. They equal the float64 states at
    the segment starts (final-state bar); the forward's outputs are bitwise
    those of an inference call; the gradients through them meet the bars
    and agree with the backward that recomputes the states (no checkpoints)."""
    from qla import gdn
    S = 2
    case = dict(B=1, T=1000, Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True, dht=True, seg=S)
    inp, do, dht = make_case_inputs(case, gen)
    args = lambda x: (x["q"], x["k"], x["v"], x["g"], x["beta"])  # noqa: E731
    kw = dict(output_final_state=True, cu_seqlens=None, segment_chunks=S)
    with torch.no_grad():
        o_inf, ht_inf = fn(*args(inp), initial_state=inp["initial_state"], **kw)
    leaves = {n: inp[n].detach().clone().requires_grad_() for n in ("q", "k", "v", "g", "beta", "initial_state")}
    o, ht = fn(*args(leaves), initial_state=leaves["initial_state"], **kw)
    ck = o.grad_fn.saved_tensors[7]
    nz = -(-math.ceil(1000 / 64) // S)
    if ck is None or tuple(ck.shape) != (nz, 4, 128, 128):
        return False, f"checkpoints {None if ck is None else tuple(ck.shape)}, expected {(nz, 4, 128, 128)}"
    if not (torch.equal(o.detach(), o_inf) and torch.equal(ht.detach(), ht_inf)):
        return False, "training-mode outputs differ from the inference call's"
    worst = 0.0
    for z in range(1, nz):
        t = 64 * S * z
        pre = {n: inp[n][:, :t].double() for n in ("q", "k", "v", "g", "beta")}
        _, ref = fw.reference(pre["q"], pre["k"], pre["v"], pre["g"], pre["beta"], None,
                              inp["initial_state"].double(), None, False)
        worst = max(worst, fw.rms_rel(ck[z], ref[0]))
    if not worst <= 5e-3:
        return False, f"checkpoints vs float64 states: {worst:.1e} (bar 5e-3)"
    torch.autograd.backward([o, ht], [do, dht])
    got = {"d" + n: leaves[n].grad for n in ("q", "k", "v", "g", "beta")}
    got["dh0"] = leaves["initial_state"].grad
    ref = grads_ref(case, inp, do, dht)
    rec = dict(zip(NAMES, gdn._backward(*args(inp), None, inp["initial_state"], None, False, S, do, dht)))
    notes = []
    for n in NAMES:
        e_ref, e_rec = fw.rms_rel(got[n], ref[n]), fw.rms_rel(got[n], rec[n])
        if not (e_ref <= BARS[n] and e_rec <= BARS[n]):
            notes.append(f"{n}: {e_ref:.1e} vs float64, {e_rec:.1e} vs the recompute (bar {BARS[n]})")
    if notes:
        return False, "; ".join(notes)
    return True, (f"{nz} checkpoints, worst {worst:.1e} vs float64 states; outputs bitwise the inference "
                  f"call's; gradients within the bars")


def run_cu_host_cache(fn, gen):
    """cu_seqlens is copied to the host (a synchronizing copy, for its
    validation) once per tensor object and version: a second forward and the
    backward with the same tensor copy nothing; an in-place change is seen
    (validated again: a decreasing offset is refused, naming cu_seqlens)."""
    from qla import gdn
    case = dict(lens=[100, 1, 300], Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True, dht=True, B=1)
    inp, do, dht = make_case_inputs(case, gen)
    cu = inp["cu_seqlens"].clone()
    args = lambda x: (x["q"], x["k"], x["v"], x["g"], x["beta"])  # noqa: E731
    n0 = gdn._cu_host_copies
    with torch.no_grad():
        fn(*args(inp), initial_state=inp["initial_state"], output_final_state=True, cu_seqlens=cu)
        fn(*args(inp), initial_state=inp["initial_state"], output_final_state=True, cu_seqlens=cu)
    leaves = {n: inp[n].detach().clone().requires_grad_() for n in ("q", "k", "v", "g", "beta")}
    o, ht = fn(*args(leaves), initial_state=inp["initial_state"], output_final_state=True, cu_seqlens=cu)
    torch.autograd.backward([o, ht], [do, dht])
    torch.cuda.synchronize()
    copies = gdn._cu_host_copies - n0
    if copies != 1:
        return False, f"{copies} host copies of cu_seqlens for 3 forwards and a backward (expected 1)"
    with torch.no_grad():
        cu[1] = cu[2] + 1  # offsets no longer non-decreasing
    try:
        with torch.no_grad():
            fn(*args(inp), initial_state=inp["initial_state"], output_final_state=True, cu_seqlens=cu)
        return False, "an in-place change of cu_seqlens to bad offsets was not refused"
    except Exception as e:  # noqa: BLE001
        if "cu_seqlens" not in str(e):
            return False, f"the refusal does not name cu_seqlens: {e}"
    return True, "one host copy for 3 forwards and a backward; an in-place change validated again"


def bad_inputs(fn):
    """(name, thunk, keywords): bad gradient inputs raise, naming the problem."""
    from qla import gdn
    dev, bf = "cuda", torch.bfloat16

    def base():
        q = torch.randn(1, 64, 2, 128, device=dev).to(bf)
        v = torch.randn(1, 64, 4, 128, device=dev).to(bf)
        g = torch.nn.functional.logsigmoid(torch.randn(1, 64, 4, device=dev))
        beta = torch.rand(1, 64, 4, device=dev)
        return q, q.clone(), v, g, beta

    def call(do, dht):
        q, k, v, g, beta = base()
        return gdn._backward(q, k, v, g, beta, None, None, None, False, 0, do, dht)

    return [
        ("do with the wrong shape", lambda: call(torch.zeros(1, 64, 4, 64, device=dev, dtype=bf), None),
         ["do has shape", "[B, T, Hv, V]"]),
        ("dht with the wrong shape", lambda: call(torch.zeros(1, 64, 4, 128, device=dev, dtype=bf),
                                                  torch.zeros(1, 4, 128, 64, device=dev)), ["dht has shape"]),
        ("do on the CPU", lambda: call(torch.zeros(1, 64, 4, 128, dtype=bf), None), ["do must be a CUDA tensor"]),
    ]


def warm(cases):
    """Compiles every kernel the cases use (forward and backward) into the
    kernel cache; needs neither torch nor a GPU."""
    from qla import gdn
    for c in cases:
        for bwd in (False, True):
            gdn.warmup(c["dtype"], c["K"], c["V"], beta_dtype=c.get("beta", "f32"), varlen=bool(c.get("lens")),
                       cu_dtype=c.get("cu_dtype", "i32"), use_qk_l2norm=bool(c.get("l2")),
                       initial_state=bool(c.get("h0")), output_final_state=bool(c.get("dht")),
                       g_dtype=c.get("g", "f32"), backward=bwd, dht=bool(c.get("dht")))


def main():
    global torch
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int)
    ap.add_argument("--filter")
    ap.add_argument("--no-large", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    paths = ap.add_mutually_exclusive_group()
    paths.add_argument("--fused", action="store_true",
                       help="QLA_GDN_BWD_FUSED=1: the fused gradient kernel (the default), every case with K, V <= 128")
    paths.add_argument("--six", action="store_true",
                       help="QLA_GDN_BWD_FUSED=0: the six kernels (dh, dqk, wy in the fused kernel's place)")
    ap.add_argument("--warm-only", action="store_true",
                    help="only compile the suite's kernels into the kernel cache (no torch, no GPU needed)")
    args = ap.parse_args()
    global FUSED
    FUSED = not args.six
    log_path = None
    if args.six:
        os.environ["QLA_GDN_BWD_FUSED"] = "0"
    elif args.fused:
        os.environ["QLA_GDN_BWD_FUSED"] = "1"
    else:
        os.environ.pop("QLA_GDN_BWD_FUSED", None)
    if FUSED:  # before libqla.so is loaded: read by its log and by every backward call
        import tempfile
        os.environ["QLA_LOG"] = "info"
        log_path = os.path.join(tempfile.mkdtemp(prefix="qla-fused-"), "qla.log")
        os.environ["QLA_LOG_FILE"] = log_path
    if args.warm_only:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        t0 = time.time()
        cases = build_cases() + [dict(B=1, T=1000, Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True, dht=True)]
        warm(cases)
        print(f"warmed {len(cases)} configurations in {time.time() - t0:.0f} s")
        return 0
    try:
        import torch as _torch
        import torch.nn.functional as _F
    except ImportError:
        print("SKIP: PyTorch is not installed")
        return 0
    torch = _torch
    fw.torch, fw.F = _torch, _F
    if not torch.cuda.is_available():
        print("SKIP: no GPU (torch.cuda.is_available() is False)")
        return 0
    fw.DTYPES.update(bf16=torch.bfloat16, f16=torch.float16, f32=torch.float32)
    try:
        import qla
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import qla
    fn = qla.chunk_gated_delta_rule
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % 1_000_000_007
    gen = torch.Generator(device="cuda").manual_seed(seed)
    torch.manual_seed(seed)
    print(f"seed {seed} (reproduce with --seed {seed}), {torch.cuda.get_device_name()}, torch {torch.__version__}")
    passed = failed = 0
    W = 58
    print(f"\nbackward conformance: rms(grad - ref) / rms(ref); bars " +
          ", ".join(f"{n} {BARS[n]}" for n in NAMES))
    print(f"  {'case':{W}s} " + " ".join(f"{n:>8s}" for n in NAMES) + "    time")
    cases = build_cases()
    if args.no_large:
        cases = [c for c in cases if not c.get("large")]
    if args.filter:
        cases = [c for c in cases if args.filter in case_name(c)]
    t_all = time.time()
    for c in cases:
        t0 = time.time()
        try:
            ok, errs, note = run_case(fn, c, gen)
        except Exception as e:  # noqa: BLE001
            ok, errs, note = False, {}, f"raised {type(e).__name__}: {str(e).strip()[:300]}"
            if args.verbose:
                traceback.print_exc()
        passed += ok
        failed += not ok
        cols = " ".join(f"{errs[n]:8.1e}" if n in errs else f"{'-':>8s}" for n in NAMES)
        print(f"  {case_name(c):{W}s} {cols} {time.time() - t0:6.1f}s  {'PASS' if ok else 'FAIL'}"
              + (f"  {note}" if note else ""), flush=True)
        if c.get("large"):
            torch.cuda.empty_cache()

    print("\nrepeatability and CUDA graphs")
    for name, thunk in (("100 repeated backward calls", lambda: run_repeat(fn, gen)),
                        ("forward + backward in one CUDA graph vs eager", lambda: run_graph(fn, gen)),
                        ("training mode: the forward's checkpoints", lambda: run_checkpoints(fn, gen)),
                        ("cu_seqlens copied to the host once per tensor", lambda: run_cu_host_cache(fn, gen))):
        try:
            ok, what = thunk()
            what = what if isinstance(what, str) else f"worst rms rel {what:.1e} (bar 1e-6)"
        except Exception as e:  # noqa: BLE001
            ok, what = False, f"raised {type(e).__name__}: {str(e).strip()[:300]}"
            if args.verbose:
                traceback.print_exc()
        passed += ok
        failed += not ok
        print(f"  {name:{W}s} {'PASS' if ok else 'FAIL'}  {what}", flush=True)

    print("\nbad inputs (the message must name the problem)")
    for name, thunk, kws in bad_inputs(fn):
        try:
            thunk()
            ok, msg = False, "no exception raised"
        except Exception as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {e}"
            ok = any(k.lower() in msg.lower() for k in kws)
        passed += ok
        failed += not ok
        print(f"  {name:{W}s} {'PASS' if ok else 'FAIL'}  {msg[:200]}", flush=True)

    if FUSED:
        text = open(log_path).read() if os.path.exists(log_path) else ""
        ok = "gdn_bwd_fused" in text
        passed += ok
        failed += not ok
        print(f"  {'the fused gradient kernel ran (QLA log)':{W}s} {'PASS' if ok else 'FAIL'}  {log_path}",
              flush=True)
        # Its own state-gradient segments (fusedBackwardSchedule) where heads
        # are few: the suite's cases have 1 to 8 v-heads on 132 SMs.
        split = [l for l in text.splitlines() if "fused gradient kernel, state gradient in segments of" in l]
        ok = bool(split)
        passed += ok
        failed += not ok
        print(f"  {'... with its own segments (QLA log)':{W}s} {'PASS' if ok else 'FAIL'}  "
              f"{len(split)} schedules split" + (f", e.g. {split[0].split('info: ')[-1][:150]}" if split else ""),
              flush=True)

    print(f"\n{passed} passed, {failed} failed  ({time.time() - t_all:.0f} s, seed {seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
