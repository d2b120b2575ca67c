"""FLA's own chunk GDN tests (tests/ops/test_gdn.py of flash-linear-attention)
run through pytest with FLA's ``chunk_gated_delta_rule`` replaced by QLA's
``qla.chunk_gated_delta_rule`` (forward and backward on QLA's kernels).

    PYTHONPATH=python:.fla QLA_LIBRARY=build/compiler/libqla.so python3 test/gpu/fla_gdn_tests.py
        [--fla-tests .fla/tests/ops/test_gdn.py] [-k EXPR] [--list] [--cast-initial-state]
        [--segment-chunks N] [--no-flash-qla-tests] [--baseline] [-- PYTEST_ARGS...]

Nothing of FLA is copied here: this is a pytest plugin that swaps the op.
Only the op under test is swapped; FLA's references (the token-recurrent
naive_recurrent_gated_delta_rule, torch autograd through it), its
assert_close and its tolerances stay FLA's, unchanged.

What is patched (names in FLA, checked on the GPU machine's FLA checkout):
  * ``fla.ops.gated_delta_rule.chunk_gated_delta_rule`` (the package
    attribute test_gdn.py imports at module import time) before pytest
    imports the test module, and restored afterwards;
  * the test module's own global ``chunk_gated_delta_rule`` after import;
  * the test module's ``_flash_qla_run(monkeypatch, **kwargs)`` helper (the
    test_flash_qla_* tests call the op through it; it asserts that FLA
    dispatched to the FlashQLA backend): it calls the swapped op instead, and
    those tests' skipif marks that demand the flash_qla package are dropped
    (--no-flash-qla-tests leaves them out instead).
  * environment, before FLA is imported: FLA_DISABLE_BACKEND_DISPATCH=1
    (test_chunk skips its GVA cases otherwise, for a TileLang limitation that
    does not concern QLA), FLA_FLASH_QLA=0 and FLA_TILELANG=0 unless set,
    FLA_CI_ENV removed (it turns assert_close's failures into warnings);
    ``fla.ops.common.chunk_o.TRITON_ABOVE_3_7_1 = True`` (FLA's own backward
    refuses Triton < 3.7.1 on Hopper; only --baseline uses FLA's backward).

Scope: the tests of the chunk op (those calling chunk_gated_delta_rule).
Every other test of the file (fused_recurrent, the gate kernel, FLA's WY
helper, the FlashQLA backend's verifier, device-flag checks) is deselected
and listed. Every parametrized case of the chunk tests is classified against
QLA's contract (docs/gdn.md, kernels/gdn/include/qla/gdn.h): cases outside it
are skipped with the reason; the rest run as FLA wrote them. A case that
passes without ever calling QLA's op is failed (the swap did not take).

Prints SKIP and exits 0 without PyTorch, a GPU, pytest or FLA; otherwise
pytest's report and a summary (passed, failed, skipped with reasons), exit
status 1 on any failure.
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# ----------------------------------------------------------------------------
# Classification of test_gdn.py against QLA's contract
# ----------------------------------------------------------------------------

# Tests of the file that are not tests of the chunk op (deselected).
OUT_OF_SCOPE = {
    "test_chunk_gated_delta_rule_fwd_h_blackwell_triton_guard":
        "checks the autotune configs of FLA's Triton fwd_h kernel on Blackwell (calls no op)",
    "test_fused_recurrent": "fused_recurrent_gated_delta_rule (the token-recurrent op), which QLA does not replace",
    "test_fused_recurrent_state_v_first": "fused_recurrent_gated_delta_rule, which QLA does not replace",
    "test_fused_recurrent_gate_in_kernel": "fused_recurrent_gated_delta_rule, which QLA does not replace",
    "test_fused_recurrent_beta_sigmoid_in_kernel": "fused_recurrent_gated_delta_rule, which QLA does not replace",
    "test_fused_recurrent_gate_in_kernel_varlen": "fused_recurrent_gated_delta_rule, which QLA does not replace",
    "test_gate": "FLA's fused_gdn_gate kernel against naive_gdn_gate (no chunk op)",
    "test_prepare_wy_repr_bwd_no_g": "FLA's internal WY helpers prepare_wy_repr_bwd / recompute_w_u_fwd (no chunk op)",
    "test_flash_qla_verifier_rejects": "the FlashQLA backend's argument verifier (no op call)",
    "test_flash_qla_verifier_sm120_accepts_forward": "the FlashQLA backend's argument verifier (no op call)",
    "test_flash_qla_verifier_sm120_rejects_backward": "the FlashQLA backend's argument verifier (no op call)",
    "test_flash_qla_verifier_sm120_rejects_float16": "the FlashQLA backend's argument verifier (no op call)",
    "test_flash_qla_sm120_flag_is_exact_capability": "FLA's SM120 device flag (no op call)",
}

# Chunk tests whose every case uses an option QLA does not take (none now:
# the gate, beta from logits and V-first states are taken).
FEATURE_OUT = {}

# Chunk tests reviewed case by case (the parameter checks below apply).
# value: the dtype of q/k/v where the test fixes it in its body rather than
# in a parameter, and whether its initial state has the input dtype.
REVIEWED = {
    "test_chunk": dict(),
    "test_chunk_with_chunk_size": dict(),
    "test_chunk_varlen": dict(h0_in_input_dtype=True),
    "test_chunk_varlen_prefill": dict(h0_in_input_dtype=True),
    "test_flash_qla_chunk": dict(),
    "test_flash_qla_chunk_varlen": dict(dtype="bfloat16"),
    "test_flash_qla_chunk_forward_only": dict(),
}
REVIEWED.update({name: dict() for name in FEATURE_OUT})
REVIEWED["test_chunk_beta_sigmoid_in_kernel"] = dict()  # use_beta_sigmoid_in_kernel, allow_neg_eigval: taken
for _name in ("test_chunk_gate_in_kernel", "test_chunk_gate_in_kernel_gqa", "test_chunk_gate_in_kernel_varlen"):
    REVIEWED[_name] = dict()  # use_gate_in_kernel with A_log / dt_bias: taken
REVIEWED["test_chunk_state_v_first"] = dict()  # state_v_first: taken
REVIEWED["test_flash_qla_chunk_state_v_first"] = dict(dtype="bfloat16")

FLASH_QLA_TESTS = ("test_flash_qla_chunk", "test_flash_qla_chunk_varlen", "test_flash_qla_chunk_state_v_first",
                   "test_flash_qla_chunk_forward_only")


def _dtype_name(d) -> str:
    return str(d).replace("torch.", "")


def classify(name: str, params: dict, cast_h0: bool) -> tuple[str, list[str], list[str]]:
    """("scope"|"out"|"in"|"unreviewed", reasons it is outside the contract,
    notes) for one collected case of test_gdn.py."""
    if name in OUT_OF_SCOPE:
        return "scope", [OUT_OF_SCOPE[name]], []
    if name not in REVIEWED:
        if "chunk" in name:
            return "unreviewed", [], ["not reviewed by this harness (FLA's test file changed): runs; an argument "
                                      "QLA refuses turns it into a skip"]
        return "scope", ["not a test of chunk_gated_delta_rule (not reviewed by this harness)"], []
    facts = REVIEWED[name]
    reasons, notes = [], []
    if name in FEATURE_OUT:
        reasons.append(FEATURE_OUT[name])
    # K and V in {64, 128, 256}; D is both.
    for key in ("D", "K", "V"):
        takes = (64, 128, 256)
        if key in params and params[key] not in takes:
            what = "K = V" if key == "D" else key
            reasons.append(f"{what} = {params[key]} (QLA takes {', '.join(map(str, takes))})")
    dtype = _dtype_name(params["dtype"]) if "dtype" in params else facts.get("dtype")
    if dtype is not None and dtype not in ("float16", "bfloat16"):
        reasons.append(f"q/k/v in {dtype} (QLA takes bf16 or f16)")
    if "chunk_size" in params and params["chunk_size"] != 64:
        reasons.append(f"chunk_size={params['chunk_size']} (QLA's chunks are 64 tokens; it takes no chunk_size)")
    if facts.get("h0_in_input_dtype") and dtype not in (None, "float32"):
        if cast_h0:
            notes.append(f"initial_state in {dtype} cast to f32 by the harness (--cast-initial-state)")
        else:
            reasons.append(f"initial_state in {dtype} (QLA takes an f32 initial state; --cast-initial-state "
                           "casts it)")
    return ("out" if reasons else "in"), reasons, notes


# ----------------------------------------------------------------------------
# The swapped op
# ----------------------------------------------------------------------------

class OutOfContract(Exception):
    """An argument of FLA's chunk_gated_delta_rule that QLA's does not take."""


class QlaOp:
    """FLA's chunk_gated_delta_rule signature over qla.chunk_gated_delta_rule."""

    def __init__(self, qla_fn, cast_h0: bool, segment_chunks: int):
        self.qla_fn, self.cast_h0, self.segment_chunks = qla_fn, cast_h0, segment_chunks
        self.calls = 0
        self.f32 = None  # torch.float32, set by main()
        self.__name__ = "chunk_gated_delta_rule"
        self.__qualname__ = "qla_swapped_chunk_gated_delta_rule"

    def __call__(self, q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                 use_qk_l2norm_in_kernel=False, use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                 state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, chunk_indices=None, cp_context=None,
                 **kwargs):
        refused = []
        if kwargs.pop("transpose_state_layout", None) is not None:
            refused.append("transpose_state_layout (deprecated; FLA maps it)")
        if cp_context is not None:
            refused.append("cp_context (FLA's context parallelism)")
        gate = bool(kwargs.pop("use_gate_in_kernel", False))
        A_log, dt_bias = kwargs.pop("A_log", None), kwargs.pop("dt_bias", None)
        if not gate:  # FLA ignores them without the gate
            A_log = dt_bias = None
        chunk_size = kwargs.pop("chunk_size", 64)
        if chunk_size != 64:
            refused.append(f"chunk_size={chunk_size}")
        if "head_first" in kwargs:
            refused.append("head_first")
        refused += sorted(kwargs)
        if refused:
            raise OutOfContract("QLA's chunk_gated_delta_rule does not take " + ", ".join(refused))
        # cu_seqlens_cpu and chunk_indices are FLA's precomputed helpers of
        # cu_seqlens (same semantics): QLA derives its own.
        del cu_seqlens_cpu, chunk_indices
        if self.cast_h0 and initial_state is not None and initial_state.dtype != self.f32:
            initial_state = initial_state.float()  # autograd casts dh0 back to the caller's dtype
        self.calls += 1
        return self.qla_fn(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                           output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                           use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, segment_chunks=self.segment_chunks,
                           use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel,
                           allow_neg_eigval=allow_neg_eigval, use_gate_in_kernel=gate, A_log=A_log,
                           dt_bias=dt_bias, state_v_first=state_v_first)


# ----------------------------------------------------------------------------
# pytest plugin
# ----------------------------------------------------------------------------

def _crash_line(rep) -> str:
    crash = getattr(getattr(rep, "longrepr", None), "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return crash.message.strip().splitlines()[0][:240]
    text = getattr(rep, "longreprtext", "") or ""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:240] if lines else "(no message)"


def _skip_reason(rep) -> str:
    lr = rep.longrepr
    if isinstance(lr, tuple) and len(lr) == 3:
        msg = str(lr[2])
    else:
        msg = str(lr)
    return msg[len("Skipped: "):] if msg.startswith("Skipped: ") else msg


def make_plugin(pytest, test_path, op, qla_errors, swap: bool, cast_h0: bool, flash_qla: bool, listing: bool):
    """The pytest plugin object (hooks as methods)."""

    class Plugin:
        def __init__(self):
            self.patched_modules = set()
            self.klass = {}        # nodeid -> (kind, reasons, notes)
            self.deselected = {}   # function name -> (count, reason)
            self.outcome = {}      # nodeid -> "passed" | "failed" | "skipped"
            self.skips = {}        # nodeid -> reason
            self.failures = {}     # nodeid -> first line
            self.test_module = None

        def _is_target(self, item) -> bool:
            mod = getattr(item, "module", None)
            f = getattr(mod, "__file__", None)
            try:
                return f is not None and os.path.samefile(f, test_path)
            except OSError:
                return False

        def _patch(self, mod):
            if id(mod) in self.patched_modules:
                return
            self.patched_modules.add(id(mod))
            self.test_module = mod
            if not swap:
                return
            if not hasattr(mod, "chunk_gated_delta_rule"):
                raise pytest.UsageError(f"{test_path} has no global chunk_gated_delta_rule: the harness does not "
                                        "know this FLA test file")
            mod.chunk_gated_delta_rule = op
            if flash_qla and hasattr(mod, "_flash_qla_run"):
                def _flash_qla_run(monkeypatch, **kwargs):  # FLA's helper, minus its FlashQLA dispatch assertion
                    return mod.chunk_gated_delta_rule(**kwargs)
                mod._flash_qla_run = _flash_qla_run

        @pytest.hookimpl(tryfirst=True)
        def pytest_collection_modifyitems(self, session, config, items):
            kept, dropped = [], []
            for item in items:
                if not self._is_target(item):
                    kept.append(item)
                    continue
                self._patch(item.module)
                name = getattr(item, "originalname", None) or item.name.split("[")[0]
                params = dict(item.callspec.params) if hasattr(item, "callspec") else {}
                kind, reasons, notes = classify(name, params, cast_h0)
                if kind == "in" and name in FLASH_QLA_TESTS and not flash_qla:
                    kind, reasons = "scope", ["FlashQLA backend tests left out (--no-flash-qla-tests)"]
                self.klass[item.nodeid] = (kind, reasons, notes)
                if kind == "scope":
                    n, _ = self.deselected.get(name, (0, None))
                    self.deselected[name] = (n + 1, reasons[0])
                    dropped.append(item)
                    continue
                if kind == "out":
                    item.add_marker(pytest.mark.skip(reason="outside QLA's contract: " + "; ".join(reasons)))
                elif name in FLASH_QLA_TESTS and swap:
                    # Their skipif marks ask for the flash_qla package and an
                    # SM90/SM100 GPU; QLA needs neither package (this script
                    # already checked for an sm_90 GPU).
                    item.own_markers[:] = [m for m in item.own_markers
                                           if not (m.name == "skipif" and "FlashQLA" in str(m.kwargs.get("reason", "")))]
                kept.append(item)
            if dropped:
                config.hook.pytest_deselected(items=dropped)
                items[:] = kept
            if listing:
                self.print_table()

        def print_table(self):
            print("\nclassification of the collected cases of test_gdn.py against QLA's contract:")
            for nodeid, (kind, reasons, notes) in self.klass.items():
                label = {"scope": "OUT OF SCOPE", "out": "OUT", "in": "IN", "unreviewed": "UNREVIEWED"}[kind]
                why = "; ".join(reasons + notes)
                print(f"  {label:12s} {nodeid.split('::')[-1]}" + (f"  -- {why}" if why else ""))

        def pytest_runtest_setup(self, item):
            op.calls = 0

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            result = yield
            rep = result.get_result()
            kind = self.klass.get(item.nodeid, ("other",))[0]
            if kind not in ("in", "unreviewed") or rep.when != "call":
                return
            exc = call.excinfo
            if exc is not None and kind == "unreviewed" and exc.errisinstance((OutOfContract,) + qla_errors):
                rep.outcome = "skipped"
                rep.longrepr = (str(test_path), item.location[1] or 0,
                                f"Skipped: outside QLA's contract (unreviewed test): {exc.value}")
                self.klass[item.nodeid] = ("out", [f"unreviewed test: {exc.value}"], [])
            elif exc is None and rep.passed and swap and op.calls == 0:
                rep.outcome = "failed"
                rep.longrepr = ("harness: the test passed without calling QLA's chunk_gated_delta_rule "
                                "(the swap did not take)")

        def pytest_runtest_logreport(self, report):
            nodeid = report.nodeid
            if nodeid not in self.klass:
                return
            prev = self.outcome.get(nodeid)
            if report.failed:
                self.outcome[nodeid] = "failed"
                self.failures.setdefault(nodeid, ("error in " + report.when + ": " if report.when != "call" else "")
                                         + _crash_line(report))
            elif report.skipped and prev != "failed":
                self.outcome[nodeid] = "skipped"
                self.skips[nodeid] = _skip_reason(report)
            elif report.passed and report.when == "call" and prev is None:
                self.outcome[nodeid] = "passed"

        def summary(self) -> tuple[int, int, int]:
            short = lambda nodeid: nodeid.split("::")[-1]  # noqa: E731
            passed = [n for n, o in self.outcome.items() if o == "passed"]
            failed = [n for n, o in self.outcome.items() if o == "failed"]
            skipped = [n for n, o in self.outcome.items() if o == "skipped"]
            contract = [n for n in skipped if self.klass[n][0] == "out"]
            own = [n for n in skipped if self.klass[n][0] != "out"]
            what = "QLA's chunk_gated_delta_rule" if swap else "FLA's own chunk_gated_delta_rule (--baseline)"
            print("\n" + "=" * 100)
            print(f"FLA {os.path.basename(test_path)} with {what}")
            if self.deselected:
                print(f"\nnot run, out of scope ({sum(n for n, _ in self.deselected.values())} cases):")
                for name, (n, why) in self.deselected.items():
                    print(f"  {name} ({n} case{'s' if n != 1 else ''}): {why}")
            if contract:
                print(f"\nskipped, outside QLA's contract ({len(contract)}):")
                for n in contract:
                    print(f"  {short(n)}: {'; '.join(self.klass[n][1])}")
            if own:
                print(f"\nskipped by FLA's test itself ({len(own)}):")
                for n in own:
                    print(f"  {short(n)}: {self.skips.get(n, '')}")
            noted = [n for n in passed + failed if self.klass[n][2]]
            if noted:
                print("\nnotes:")
                for n in noted:
                    print(f"  {short(n)}: {'; '.join(self.klass[n][2])}")
            if failed:
                print(f"\nFAILED ({len(failed)}):")
                for n in failed:
                    print(f"  {short(n)}: {self.failures.get(n, '')}")
            print(f"\n{len(passed)} passed, {len(failed)} failed, {len(contract)} skipped outside QLA's contract, "
                  f"{len(own)} skipped by the test itself")
            return len(passed), len(failed), len(skipped)

    return Plugin()


# ----------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------

def find_fla_tests(given):
    if given:
        for cand in (given, os.path.join(given, "test_gdn.py"), os.path.join(given, "ops", "test_gdn.py")):
            if os.path.isfile(cand):
                return os.path.abspath(cand)
        return None
    for p in sys.path:
        cand = os.path.join(p or os.getcwd(), "tests", "ops", "test_gdn.py")
        if os.path.isfile(cand):
            return os.path.abspath(cand)
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fla-tests", help="FLA's tests/ops/test_gdn.py (default: tests/ops/test_gdn.py under a "
                                        "sys.path entry, e.g. .fla on PYTHONPATH)")
    ap.add_argument("-k", dest="kexpr", help="pytest -k expression (selects cases, e.g. 'test_chunk and not varlen')")
    ap.add_argument("--list", action="store_true", help="only collect and print every case's classification")
    ap.add_argument("--cast-initial-state", action="store_true",
                    help="cast an initial_state that is not f32 to f32 before QLA (beyond QLA's contract: FLA's "
                         "varlen tests give an f16 one); those cases then run instead of being skipped")
    ap.add_argument("--segment-chunks", type=int, default=0,
                    help="QLA's segment_chunks (0: cost model, -1: never split, n > 0: force context-parallel "
                         "segments of n chunks)")
    ap.add_argument("--no-flash-qla-tests", action="store_true",
                    help="leave out the test_flash_qla_chunk* tests (run through their _flash_qla_run helper)")
    ap.add_argument("--baseline", action="store_true",
                    help="do not swap: FLA's own op on the same selection (tells QLA's failures from the "
                         "environment's)")
    ap.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    args = ap.parse_args(argv)

    try:
        import torch
    except ImportError:
        print("SKIP: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("SKIP: no GPU (torch.cuda.is_available() is False)")
        return 0
    try:
        import pytest
    except ImportError:
        print("SKIP: pytest is not installed")
        return 0

    # Before FLA is imported (fla.ops.backends reads these at import).
    os.environ["FLA_DISABLE_BACKEND_DISPATCH"] = "1"
    os.environ.setdefault("FLA_FLASH_QLA", "0")
    os.environ.setdefault("FLA_TILELANG", "0")
    if os.environ.pop("FLA_CI_ENV", None) is not None:
        print("note: FLA_CI_ENV removed (it makes FLA's assert_close warn instead of fail)")
    try:
        import einops  # noqa: F401  (test_gdn.py imports it)
        import fla  # noqa: F401
        import fla.ops.gated_delta_rule as fla_gdr
    except ImportError as e:
        print(f"SKIP: FLA is not importable ({e}); extract it with "
              "`git -C <mirror> archive HEAD fla tests | tar -x -C .fla` and put .fla on PYTHONPATH")
        return 0
    test_path = find_fla_tests(args.fla_tests)
    if test_path is None:
        print("SKIP: FLA's tests/ops/test_gdn.py not found" + (f" at {args.fla_tests}" if args.fla_tests else
                                                                " under any sys.path entry (use --fla-tests)"))
        return 0
    try:
        import fla.ops.common.chunk_o as fla_chunk_o
        fla_chunk_o.TRITON_ABOVE_3_7_1 = True
    except (ImportError, AttributeError):
        pass

    swap = not args.baseline
    qla_errors = ()
    op = QlaOp(None, args.cast_initial_state, args.segment_chunks)
    op.f32 = torch.float32
    if swap and not args.list:
        cap = torch.cuda.get_device_capability()
        if cap != (9, 0):
            print(f"SKIP: QLA's GDN kernels are sm_90a (Hopper); this GPU is sm_{cap[0]}{cap[1]}")
            return 0
        try:
            import qla
        except ImportError:
            sys.path.insert(0, os.path.join(ROOT, "python"))
            import qla
        import qla.gdn
        from qla import QlaError
        try:
            lib = qla.gdn._lib()
        except QlaError as e:
            print(f"FAIL: {e}")
            return 1
        if not hasattr(lib, "qla_gdn_backward"):
            print(f"FAIL: {qla.library_path()} has no qla_gdn_backward (FLA's tests need the backward): rebuild QLA")
            return 1
        qla_errors = (QlaError,)
        op.qla_fn = qla.chunk_gated_delta_rule

    plugin = make_plugin(pytest, test_path, op, qla_errors, swap, args.cast_initial_state,
                         not args.no_flash_qla_tests, args.list)
    base = os.path.dirname(os.path.dirname(os.path.dirname(test_path)))  # .fla (holds tests/conftest.py)
    pargs = [test_path, "--rootdir", base, "--confcutdir", base, "-p", "no:cacheprovider", "-v", "--tb=short"]
    if args.kexpr:
        pargs += ["-k", args.kexpr]
    if args.list:
        pargs += ["--collect-only", "-q"]
    pargs += args.pytest_args

    print(f"FLA tests: {test_path}")
    print("op under test: " + ("qla.chunk_gated_delta_rule" + (f" (segment_chunks={args.segment_chunks})"
                                                              if args.segment_chunks else "")
                               if swap else "FLA's own (baseline)"))
    sys.stdout.flush()
    original = fla_gdr.chunk_gated_delta_rule
    if swap:
        fla_gdr.chunk_gated_delta_rule = op  # what `from fla.ops.gated_delta_rule import ...` binds at import
    try:
        rc = pytest.main(pargs, plugins=[plugin])
    finally:
        fla_gdr.chunk_gated_delta_rule = original
    if args.list:
        return 0 if rc in (0, 5) else 1
    if plugin.test_module is None:
        print(f"FAIL: pytest collected nothing from {test_path} (exit status {int(rc)})")
        return 1
    _, failed, _ = plugin.summary()
    if failed:
        return 1
    if int(rc) not in (0, 5):  # 5: everything deselected or skipped
        print(f"FAIL: pytest exit status {int(rc)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
