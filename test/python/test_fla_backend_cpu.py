"""qla.fla (QLA as a backend of FLA's chunk_gated_delta_rule) without torch,
FLA or a GPU:

  1. `import qla` imports neither qla.fla nor FLA; `import qla.fla` needs
     neither torch nor FLA; enable() without FLA (and QLA_FLA_BACKEND=1 at
     import) raise an ImportError that says what is missing.
  2. The verifier's core, qla.fla.check, on a table of argument descriptions
     (in and out of QLA's contract, one row per rule), and agreeing with
     test/gpu/fla_gdn_tests.py's classification of FLA's test cases.
  3. FLA's real dispatch code, for each FLA release: fla-core 0.6.0
     (fla/backends.py), 0.5.2 (fla/ops/backends/__init__.py) and the newest
     fla-core on PyPI (so that FLA's next move of that API fails here, not for
     a user), fetched with `pip download` into BUILD/fla-wheels (the build
     tree of the libqla.so given; --wheels DIR to choose; the pinned wheels
     are downloaded once, the newest resolved on every run), plus an FLA
     checkout at $FLA_SRC or .fla if there is one. Per release, a temporary
     tree holds the release's dispatch module and its
     fla/ops/gated_delta_rule/backends/ package copied unchanged, stand-ins
     for torch and fla.utils (an sm_90 machine), and the GDN op generated
     from the release's own chunk.py (its dispatch import, decorators and
     signature; the body returns ("fla", None)). There: enable() registers
     QLA in the registry FLA's dispatch consults, a call inside the contract
     reaches QLA's op (logged "FLA chunk_gated_delta_rule -> QLA", counted),
     calls outside it fall back to FLA's function, QLA_FLA_BACKEND=0 at call
     time and disable() give FLA's dispatch back, QLA_FLA_BACKEND=1 at import
     enables, FLA_DISABLE_BACKEND_DISPATCH=1 makes enable() refuse; with a
     stand-in flash_qla package installed, FLA's real FlashQLA backend
     (priority 3) gets what QLA (priority 1) refuses and its verifier accepts.
     Without the wheels (no network, no pip) the release is skipped (SKIP),
     unless $CI is set: then it fails.
  4. QLA_LOG=info gives the "qla" logger a handler.

    python3 test/python/test_fla_backend_cpu.py [BUILD/compiler/libqla.so] [--wheels DIR]

(test_package.py runs it as part of ctest's python_package.) Each check
prints PASS or FAIL; exit status 1 on any failure.
"""
import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

check = Checks()


def run(code, pythonpath, **env):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("QLA_") and not k.startswith("FLA_") and k != "PYTHONPATH"}
    e.update(PYTHONPATH=os.pathsep.join(pythonpath), **env)
    p = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120,
                       cwd=tempfile.gettempdir())
    return p.returncode, p.stdout, p.stderr


def have(module, pythonpath):
    rc, _, _ = run(f"import {module}", pythonpath)
    return rc == 0


# ----------------------------------------------------------------------------
# 1. Imports
# ----------------------------------------------------------------------------

def imports(lib):
    py = [os.path.join(ROOT, "python")]
    rc, out, err = run("import sys, qla; print('qla.fla' in sys.modules, 'fla' in sys.modules, "
                       "'torch' in sys.modules)", py)
    check("`import qla` imports neither qla.fla nor FLA nor torch", rc == 0 and out.split() == ["False"] * 3,
          out + err)
    rc, out, err = run("import sys, qla.fla; print(qla.fla.is_enabled(), 'fla' in sys.modules, "
                       "'torch' in sys.modules); qla.fla.disable(); print('ok')", py)
    check("`import qla.fla` needs neither torch nor FLA, disabled until enable(); disable() is a no-op then",
          rc == 0 and out.split() == ["False", "False", "False", "ok"], out + err)
    if have("fla", py) or have("torch", py):
        print("  note: FLA or torch is importable here: the ImportError checks are left out")
        return
    rc, out, err = run("import qla.fla\ntry:\n    qla.fla.enable()\nexcept ImportError as e:\n    print(e)\n", py)
    check("enable() without FLA: ImportError naming flash-linear-attention, fla.backends (FLA >= 0.6) and "
          "fla.ops.backends (FLA 0.5)",
          rc == 0 and "flash-linear-attention" in out and "fla.backends in FLA >= 0.6" in out and
          "fla.ops.backends in FLA 0.5" in out, out + err)
    rc, out, err = run("import qla.fla", py, QLA_FLA_BACKEND="1")
    check("QLA_FLA_BACKEND=1 at import without FLA: ImportError naming QLA_FLA_BACKEND=1",
          rc != 0 and "ImportError: QLA_FLA_BACKEND=1: qla.fla needs flash-linear-attention" in err, out + err)
    rc, out, err = run("import qla.fla; print(qla.fla.is_enabled())", py, QLA_FLA_BACKEND="0")
    check("QLA_FLA_BACKEND=0 at import: nothing imported, disabled", rc == 0 and out.strip() == "False", out + err)


# ----------------------------------------------------------------------------
# 2. The verifier's core
# ----------------------------------------------------------------------------

def contract():
    import qla.fla as F
    T = F.TensorDesc
    E = F.Environment

    def call(B=1, L=256, H=4, HV=None, K=128, V=None, dt="bfloat16", kdt=None, vdt=None, gdt="float32",
             bdt="float32", h0=None, cu=None, cudt="int64", dev="cuda:0", grad=False, **kw):
        HV = H if HV is None else HV
        V = K if V is None else V
        a = dict(q=T(dt, (B, L, H, K), dev, grad), k=T(kdt or dt, (B, L, H, K), dev, grad),
                 v=T(vdt or dt, (B, L, HV, V), dev, grad), g=T(gdt, (B, L, HV), dev, grad),
                 beta=T(bdt, (B, L, HV), dev, grad))
        N = B
        if cu is not None:
            a["cu_seqlens"] = T(cudt, (cu + 1,), dev)
            N = cu
        if h0 is not None:
            a["initial_state"] = T(h0, (N, HV, K, V), dev, grad)
        a.update(kw)
        return a

    def change(a, **kw):
        b = dict(a)
        b.update(kw)
        return b

    base = call()
    rows = [
        # (what, env, arguments, accepted, words the reason must contain)
        ("bf16 K = V = 128", E(), base, True, None),
        ("f16 K = V = 64, GVA 4, h0 f32, ht, l2norm, scale", E(),
         call(dt="float16", K=64, H=2, HV=8, h0="float32", output_final_state=True, use_qk_l2norm_in_kernel=True,
              scale=0.1), True, None),
        ("K = 64, V = 128", E(), call(K=64, V=128), True, None),
        ("K = 128, V = 64", E(), call(K=128, V=64), True, None),
        ("g and beta in bf16 (q's dtype)", E(), call(gdt="bfloat16", bdt="bfloat16"), True, None),
        ("varlen int32 cu_seqlens, h0", E(), call(cu=3, cudt="int32", h0="float32"), True, None),
        ("varlen int64 cu_seqlens on the CPU, cu_seqlens_cpu, chunk_indices", E(),
         change(call(cu=2), cu_seqlens=T("int64", (3,), "cpu"), cu_seqlens_cpu=T("int64", (3,), "cpu"),
                chunk_indices=T("int64", (5, 2))), True, None),
        ("chunk_size=64 given, use_gate_in_kernel=False, A_log=None", E(),
         change(base, chunk_size=64, use_gate_in_kernel=False, A_log=None, dt_bias=None), True, None),
        ("T = 1", E(), call(L=1), True, None),
        ("backward needed, libqla.so with a backward", E(), call(grad=True, h0="float32"), True, None),
        ("inference mode without a backward in libqla.so", E(grad_enabled=False, has_backward=False),
         call(grad=True), True, None),
        ("no grad needed without a backward in libqla.so", E(has_backward=False), call(), True, None),
        ("scale given as an int", E(), change(base, scale=1), True, None),

        ("K = 100", E(), call(K=100), False, "K in {64, 128, 256}"),
        ("K = 512", E(), call(K=512), False, "K in {64, 128, 256}"),
        ("K = 256, V = 128", E(), call(K=256, V=128), True, None),
        ("V = 60", E(), call(K=64, V=60), False, "V in {64, 128, 256}"),
        ("V = 512", E(), call(K=128, V=512), False, "V in {64, 128, 256}"),
        ("K = 128, V = 256", E(), call(K=128, V=256), True, None),
        ("f32 inputs", E(), call(dt="float32"), False, "bf16 or f16, got f32"),
        ("k in f16 with q bf16", E(), call(kdt="float16"), False, "one dtype"),
        ("v in f32 with q bf16", E(), call(vdt="float32"), False, "one dtype"),
        ("g in f16 with q bf16", E(), call(gdt="float16"), False, "g in f32 or bf16"),
        ("beta in f64", E(), call(bdt="float64"), False, "beta in f32 or bf16"),
        ("Hv % Hqk != 0", E(), call(H=3, HV=4), False, "Hv % Hqk"),
        ("k with other heads than q", E(), change(base, k=T("bfloat16", (1, 256, 2, 128))), False, "k of q's shape"),
        ("v with another T", E(), change(base, v=T("bfloat16", (1, 255, 4, 128))), False, "B and T"),
        ("g of the wrong shape (per value channel)", E(), change(base, g=T("float32", (1, 256, 4, 128))), False,
         "g of shape [B, T, Hv]"),
        ("beta of the wrong shape", E(), change(base, beta=T("float32", (1, 256, 2))), False, "beta of shape"),
        ("3-dim q", E(), change(base, q=T("bfloat16", (256, 4, 128))), False, "4-dim"),
        ("T = 0", E(), call(L=0), False, "non-empty"),
        ("h0 in bf16", E(), call(h0="bfloat16"), False, "f32 initial_state, got bf16"),
        ("h0 in f16 (FLA's varlen tests)", E(), call(dt="float16", cu=3, h0="float16"), False,
         "f32 initial_state, got f16"),
        ("h0 with N != number of sequences", E(), change(call(cu=3), initial_state=T("float32", (2, 4, 128, 128))),
         False, "initial_state of shape"),
        ("h0 [V, K] with K != V", E(), change(call(K=64, V=128), initial_state=T("float32", (1, 4, 128, 64))),
         False, "initial_state of shape"),
        ("cu_seqlens with B = 2", E(), call(B=2, cu=2), False, "B = 1"),
        ("cu_seqlens in f32", E(), call(cu=2, cudt="float32"), False, "int32 or int64"),
        ("cu_seqlens with one entry", E(), change(base, cu_seqlens=T("int64", (1,))), False, "N >= 1"),
        ("cu_seqlens on the CPU during a CUDA graph capture", E(capturing=True),
         change(call(cu=2), cu_seqlens=T("int64", (3,), "cpu")), False, "CUDA graph"),
        ("cu_seqlens on the GPU during a CUDA graph capture", E(capturing=True), call(cu=2), True, None),
        ("cu_seqlens on another GPU", E(), change(call(cu=2), cu_seqlens=T("int64", (3,), "cuda:1")), False,
         "cu_seqlens on q's device"),
        ("cu_seqlens given as a list", E(), change(base, cu_seqlens=[0, 256]), False, "cu_seqlens to be a tensor"),
        ("chunk_size=32", E(), change(base, chunk_size=32), False, "chunk_size=32"),
        ("chunk_size=16", E(), change(base, chunk_size=16), False, "64 tokens"),
        ("use_gate_in_kernel=True with A_log", E(), change(base, use_gate_in_kernel=True, A_log=T("float32", (4,))),
         True, None),
        ("use_gate_in_kernel=True with A_log and dt_bias", E(),
         change(base, use_gate_in_kernel=True, A_log=T("float32", (4,)), dt_bias=T("float32", (4,))), True, None),
        ("use_gate_in_kernel=True without A_log", E(), change(base, use_gate_in_kernel=True), False,
         "A_log with use_gate_in_kernel"),
        ("use_gate_in_kernel=True, A_log per v-head of another count", E(),
         change(base, use_gate_in_kernel=True, A_log=T("float32", (8,))), False, "A_log of shape [Hv]"),
        ("use_gate_in_kernel=True, dt_bias on another GPU", E(),
         change(base, use_gate_in_kernel=True, A_log=T("float32", (4,)), dt_bias=T("float32", (4,), "cuda:1")),
         False, "dt_bias is on cuda:1"),
        ("A_log given without the gate (FLA ignores it)", E(), change(base, A_log=T("float32", (4,))), True, None),
        ("dt_bias given without the gate (FLA ignores it)", E(), change(base, dt_bias=T("float32", (4,))), True,
         None),
        ("use_beta_sigmoid_in_kernel=True", E(), change(base, use_beta_sigmoid_in_kernel=True), True, None),
        ("use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True", E(),
         change(base, use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True), True, None),
        ("allow_neg_eigval=True alone (no effect, as in FLA)", E(), change(base, allow_neg_eigval=True), True, None),
        ("state_v_first=True", E(), change(base, state_v_first=True), True, None),
        ("state_v_first=True with a V-first initial_state", E(),
         change(call(K=64, V=128, h0="float32"), state_v_first=True, initial_state=T("float32", (1, 4, 128, 64))), True,
         None),
        ("state_v_first=True with a K-first initial_state (K != V)", E(),
         change(call(K=64, V=128, h0="float32"), state_v_first=True), False, "[N, Hv, V, K] (state_v_first)"),
        ("transpose_state_layout=False (deprecated, FLA warns)", E(), change(base, transpose_state_layout=False),
         False, "transpose_state_layout"),
        ("head_first", E(), change(base, head_first=False), False, "head_first"),
        ("cp_context", E(), change(base, cp_context=object()), False, "cp_context"),
        ("an unknown keyword", E(), change(base, something_new=1), False, "something_new"),
        ("scale = inf", E(), change(base, scale=float("inf")), False, "finite scale"),
        ("scale given as a string", E(), change(base, scale="0.1"), False, "scale to be None or a number"),
        ("CPU tensors", E(capability=None), call(dev="cpu"), False, "CUDA tensors"),
        ("an sm_100 GPU", E(capability=(10, 0)), base, False, "sm_90a"),
        ("an sm_80 GPU", E(capability=(8, 0)), base, False, "sm_80"),
        ("beta on another GPU", E(), change(base, beta=T("float32", (1, 256, 4), "cuda:1")), False,
         "beta is on cuda:1"),
        ("q not a tensor", E(), change(base, q=None), False, "q to be a tensor"),
        ("grad needed, libqla.so without a backward", E(has_backward=False), call(grad=True), False,
         "no backward"),
    ]
    for what, env, args, want, words in rows:
        try:
            ok, reason = F.check(env, **args)
        except Exception as e:  # noqa: BLE001
            check(f"check: {what}: raised {type(e).__name__}: {e}", False)
            continue
        good = ok == want and (reason is None if want else (isinstance(reason, str) and words in reason))
        check(f"check: {what} -> {'QLA' if want else 'FLA'}" + ("" if want else f" ('{words}')"), good,
              f"got ({ok}, {reason!r})")

    # Positional arguments, in FLA's order.
    a = call(h0="float32", cu=None)
    ok, reason = F.check(E(), a["q"], a["k"], a["v"], a["g"], a["beta"], None, a["initial_state"], True, True)
    check("check: FLA's positional order (scale, initial_state, output_final_state, use_qk_l2norm_in_kernel)",
          ok and reason is None, reason)
    ok, reason = F.check(E(), a["q"], a["k"], a["v"], a["g"], a["beta"], None, a["initial_state"], True, False, True,
                         False, True, T("int64", (1,)))
    check("check: positional cu_seqlens after state_v_first (FLA's order) is checked as cu_seqlens",
          not ok and "cu_seqlens" in reason, reason)

    # Agreement with the harness that runs FLA's test_gdn.py on QLA.
    try:
        import fla_gdn_tests as H
    except ImportError as e:
        check(f"import test/gpu/fla_gdn_tests.py ({e})", False)
        return
    cases = [  # (FLA test, its parameters, the call its body makes, as a description)
        ("test_chunk", dict(D=128, dtype="float16"), call(B=4, L=1024, dt="float16", h0="float32", grad=True,
                                                          output_final_state=True)),
        ("test_chunk", dict(D=100, dtype="float16"), call(B=3, K=100, dt="float16", h0="float32", grad=True)),
        ("test_chunk", dict(D=60, dtype="float16"), call(B=2, K=60, dt="float16", h0="float32", grad=True)),
        ("test_chunk", dict(D=64, dtype="float32"), call(K=64, dt="float32", h0="float32", grad=True)),
        ("test_chunk", dict(D=64, dtype="bfloat16"), call(H=2, HV=8, K=64, h0="float32", grad=True)),
        ("test_chunk_with_chunk_size", dict(D=128, dtype="bfloat16", chunk_size=32), call(chunk_size=32)),
        ("test_chunk_with_chunk_size", dict(D=128, dtype="bfloat16", chunk_size=64), call(chunk_size=64)),
        ("test_chunk_varlen", dict(D=64, dtype="float16"), call(dt="float16", K=64, gdt="float16", cu=3,
                                                                h0="float16", grad=True)),
        ("test_chunk_varlen", dict(D=100, dtype="float16"), call(dt="float16", K=100, gdt="float16", cu=5,
                                                                 h0="float16")),
        ("test_chunk_beta_sigmoid_in_kernel", dict(D=128, dtype="bfloat16"),
         call(use_beta_sigmoid_in_kernel=True)),
        ("test_chunk_beta_sigmoid_in_kernel", dict(D=128, dtype="bfloat16", allow_neg_eigval=True),
         call(use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True)),
        ("test_chunk_state_v_first", dict(D=128, dtype="bfloat16"), call(state_v_first=True)),
        ("test_chunk_gate_in_kernel", dict(D=128, dtype="bfloat16"),
         call(use_gate_in_kernel=True, A_log=T("float32", (4,)))),
        ("test_flash_qla_chunk", dict(D=128, dtype="bfloat16"), call(B=2, L=2048, H=4, HV=16, h0="float32",
                                                                     output_final_state=True,
                                                                     use_qk_l2norm_in_kernel=True, grad=True)),
        ("test_flash_qla_chunk_varlen", dict(D=128), call(cu=3, h0="float32", grad=True)),
    ]
    for name, params, args in cases:
        kind, reasons, _ = H.classify(name, params, cast_h0=False)
        ok, reason = F.check(E(), **args)
        check(f"agrees with fla_gdn_tests.classify: {name} {params} -> {'QLA' if ok else 'FLA'}",
              (kind == "in") == ok, f"classify: {kind} {reasons}; check: {reason}")

    # FLA's fused_recurrent_gated_delta_rule (decode): check_fused_recurrent.
    def dec(B=3, H=2, HV=4, K=128, V=128, dt="bfloat16", grad=False, no_g=False, no_beta=False, **kw):
        a = dict(q=T(dt, (B, 1, H, K), "cuda:0", grad), k=T(dt, (B, 1, H, K)), v=T(dt, (B, 1, HV, V)))
        if not no_g:
            a["g"] = T("float32", (B, 1, HV))
        if not no_beta:
            a["beta"] = T("float32", (B, 1, HV))
        a.update(kw)
        return a
    for what, env, args, want in [
        ("decode, GVA", E(), dec(), None),
        ("no g, no beta", E(), dec(no_g=True, no_beta=True), None),
        ("h0 and ht, L2 norm, in-kernel gate", E(), dec(initial_state=T("float32", (3, 4, 128, 128)),
                                                       output_final_state=True, use_qk_l2norm_in_kernel=True,
                                                       use_gate_in_kernel=True, A_log=T("float32", (4,))), None),
        ("per-channel gk", E(), dec(gk=T("float32", (3, 1, 4, 128))), "per-channel decays"),
        ("cu_seqlens", E(), dec(cu_seqlens=T("int64", (4,))), "does not take cu_seqlens"),
        ("per-channel beta [B, T, Hv, V]", E(), dec(beta=T("float32", (3, 1, 4, 128))),
         "beta of shape [B, T, Hv]"),
        ("K = 512", E(), dec(K=512), "K in {64, 128, 256}"),
        ("q requires grad", E(), dec(grad=True), "forward only"),
        ("q requires grad under no_grad", E(grad_enabled=False), dec(grad=True), None),
        ("an unknown keyword", E(), dec(foo=1), "foo="),
    ]:
        try:
            ok, reason = F.check_fused_recurrent(env, **args)
        except Exception as e:  # noqa: BLE001
            check(f"check_fused_recurrent: {what}: raised {type(e).__name__}: {e}", False)
            continue
        good = ok if want is None else (not ok and want in (reason or ""))
        check(f"check_fused_recurrent: {what} -> {'QLA' if want is None else 'FLA'}", good, f"{ok} {reason}")


# ----------------------------------------------------------------------------
# 3. FLA's dispatch over stand-ins, for each FLA release
# ----------------------------------------------------------------------------

PINNED = ("0.6.0", "0.5.2")   # fla-core releases whose dispatch code must keep working
WHEEL_NAME = re.compile(r"(fla_core-([^-\s'\"/\\]+)-[^\s'\"/\\]*\.whl)")

STUB_TORCH = '''
"""A stand-in for the few names of torch that FLA's dispatch, its GDN backends and qla.fla use."""

class dtype:
    def __init__(self, name): self.name = name
    def __repr__(self): return "torch." + self.name
    __str__ = __repr__

bfloat16, float16, float32, int32, int64 = (dtype(n) for n in ("bfloat16", "float16", "float32", "int32", "int64"))

class device:
    def __init__(self, s):
        self.type, _, i = s.partition(":")
        self.index = int(i) if i else None
    def __str__(self): return self.type + ("" if self.index is None else ":%d" % self.index)

class Tensor:
    def __init__(self, shape, dt, dev="cuda:0", requires_grad=False):
        self.shape, self.dtype, self.device, self.requires_grad = tuple(shape), dt, device(dev), requires_grad
    @property
    def is_cuda(self): return self.device.type == "cuda"

LongTensor = Tensor

_grad = [True]
def is_grad_enabled(): return _grad[0]

class compiler:
    @staticmethod
    def disable(fn=None, **kw): return fn if fn is not None else (lambda f: f)

class cuda:
    @staticmethod
    def is_available(): return True
    @staticmethod
    def get_device_capability(i=None): return (9, 0)
    @staticmethod
    def current_device(): return 0
    @staticmethod
    def is_current_stream_capturing(): return False
'''

# fla/utils.py: the names FLA's dispatch and GDN backends import from it, on
# an sm_90 GPU; find_spec_cached sees only packages of this test's own trees
# (the stand-in flash_qla), never one installed on the machine.
STUB_FLA_UTILS = '''
import importlib.util
import os

_TREES = {trees!r}

def find_spec_cached(name):
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) or ""
    return spec if any(origin.startswith(t + os.sep) for t in _TREES) else None

def has_usable_nvcc():
    return False

IS_NVIDIA = True
IS_NVIDIA_HOPPER = True
IS_NVIDIA_SM100 = False
IS_NVIDIA_SM120 = False
IS_NVIDIA_BLACKWELL = False
IS_AMD = False
IS_INTEL = False
IS_NPU = False

def __getattr__(name):  # a hardware flag of a newer FLA: not this machine
    if name.startswith("IS_"):
        return False
    raise AttributeError(name)
'''

STUB_FLASH_QLA = '''
"""A stand-in for the FlashQLA package: FLA's FlashQLABackend calls this."""
def chunk_gated_delta_rule(**kw):
    return ("flash_qla", None)
'''

DRIVER = r'''
import inspect, io, logging, os, sys
import torch
import qla, qla.gdn
import qla.fla as F
from fla.ops.gated_delta_rule import chunk_gated_delta_rule as op

def fla_registry():
    """FLA's gated_delta_rule registry, found through FLA's own API of either release."""
    try:
        import fla.backends as B                      # FLA >= 0.6
    except ModuleNotFoundError as e:
        if e.name != "fla.backends":
            raise
        import fla.ops.backends as B                  # FLA 0.5
        B.BackendRegistry.ensure_initialized("gated_delta_rule")
        return B.BackendRegistry._registries.get("gated_delta_rule")
    return B._operation_registries.get("gated_delta_rule")

seen = []
def fake_qla_op(q, k, v, g, beta, **kw):
    seen.append(kw)
    return ("qla", kw)
qla.gdn.chunk_gated_delta_rule = fake_qla_op

log = io.StringIO()
h = logging.StreamHandler(log)
logging.getLogger("qla").addHandler(h)
logging.getLogger("qla").setLevel(logging.INFO)

T = torch.Tensor
def inputs(K=128, dt=torch.bfloat16, h0=torch.float32):
    q = T((1, 128, 2, K), dt); k = T((1, 128, 2, K), dt); v = T((1, 128, 4, 128), dt)
    g = T((1, 128, 4), torch.float32); beta = T((1, 128, 4), torch.float32)
    return q, k, v, g, beta, T((1, 4, K, 128), h0)

def out(name, value): print(name, value)
def types(reg): return sorted(reg._backends) if reg is not None else None

q, k, v, g, beta, h0 = inputs()
out("before", op(q, k, v, g, beta)[0])
if os.environ.get("STEP") == "fused_recurrent":
    import fla.ops, fla.ops.gated_delta_rule as G, fla.ops.gated_delta_rule.fused_recurrent as FR
    import fla.layers.stand_in_layer as L
    original = FR.fused_recurrent_gated_delta_rule
    fr_seen = []
    def fake_fr(**kw):
        fr_seen.append(kw)
        return ("qla", None)
    qla.gdn.fused_recurrent_gated_delta_rule = fake_fr
    F.enable()
    out("fr_not_asked", G.fused_recurrent_gated_delta_rule(q, k, v, g, beta=beta)[0])
    F.enable(fused_recurrent=True)
    out("fr_patched", [m.fused_recurrent_gated_delta_rule is not original for m in (fla.ops, G, FR, L)])
    qd, kd, vd = T((3, 1, 2, 128), torch.bfloat16), T((3, 1, 2, 128), torch.bfloat16), T((3, 1, 4, 128), torch.bfloat16)
    gd, bd, hd = T((3, 1, 4), torch.float32), T((3, 1, 4), torch.float32), T((3, 4, 128, 128), torch.float32)
    out("fr_inside", G.fused_recurrent_gated_delta_rule(qd, kd, vd, gd, beta=bd, initial_state=hd,
                                                       output_final_state=True, use_qk_l2norm_in_kernel=True)[0])
    out("fr_args", sorted(fr_seen[-1]) == ["beta", "g", "initial_state", "k", "output_final_state", "q",
                                          "use_qk_l2norm_in_kernel", "v"] and fr_seen[-1]["initial_state"] is hd)
    out("fr_layer", L.fused_recurrent_gated_delta_rule(qd, kd, vd, gd, beta=bd)[0])
    out("fr_no_g", FR.fused_recurrent_gated_delta_rule(qd, kd, vd, beta=bd)[0])
    out("fr_gk", G.fused_recurrent_gated_delta_rule(qd, kd, vd, gk=T((3, 1, 4, 128), torch.float32), beta=bd)[0])
    out("fr_gk_reason", F.fused_recurrent_counters()["last_rejection"])
    qg = T((3, 1, 2, 128), torch.bfloat16, requires_grad=True)
    out("fr_grad", G.fused_recurrent_gated_delta_rule(qg, kd, vd, gd, beta=bd)[0])
    torch._grad[0] = False
    out("fr_nograd", G.fused_recurrent_gated_delta_rule(qg, kd, vd, gd, beta=bd)[0])
    torch._grad[0] = True
    out("fr_counts", (F.fused_recurrent_counters()["served"], F.fused_recurrent_counters()["rejected"]))
    F.disable()
    out("fr_restored", [m.fused_recurrent_gated_delta_rule is original for m in (fla.ops, G, FR, L)])
    out("fr_disabled", G.fused_recurrent_gated_delta_rule(qd, kd, vd, gd, beta=bd)[0])
    sys.exit(0)
if os.environ.get("STEP") == "import":
    out("import_enabled", F.is_enabled())
    out("import_served", op(q, k, v, g, beta)[0])
    sys.exit(0)
if os.environ.get("STEP") == "bypass":
    try:
        F.enable()
        out("bypass", "enabled")
    except RuntimeError as e:
        out("bypass", "FLA_DISABLE_BACKEND_DISPATCH" in str(e))
    sys.exit(0)
reg = fla_registry()
own = types(reg)
if os.environ.get("STEP") == "flash_qla":
    q2, k2, _, _, _, _ = inputs(K=100)
    _, _, _, _, _, h0bf = inputs(h0=torch.bfloat16)
    out("fq_before", op(q, k, v, g, beta, initial_state=h0)[0])
    F.enable()
    out("fq_order", [b.backend_type for b in reg._get_sorted_backends() if hasattr(b, "chunk_gated_delta_rule")][:2])
    out("fq_inside", op(q, k, v, g, beta, initial_state=h0, output_final_state=True)[0])
    out("fq_h0bf16", op(q, k, v, g, beta, initial_state=h0bf)[0])
    out("fq_h0bf16_reason", F.counters()["last_rejection"])
    out("fq_K100", op(q2, k2, v, g, beta)[0])
    F.disable()
    out("fq_disabled", op(q, k, v, g, beta, initial_state=h0)[0])
    sys.exit(0)

# FLA's op has the parameters QLA's verifier takes, in its order (a release may leave some out).
names = [p.name for p in inspect.signature(op).parameters.values() if p.kind != p.VAR_KEYWORD]
ours = [p for p in inspect.signature(F.check).parameters if p not in ("env", "kwargs")]
unknown = [n for n in names if n not in ours]
order = [ours.index(n) for n in names if n in ours]
out("signature", "ok" if not unknown and order == sorted(order) else f"FLA's {names} vs QLA's {ours}")
out("own", own)
F.enable()
F.enable()  # idempotent
out("same_registry", F._registry_object() is reg)
out("added", sorted(set(types(reg)) - set(own)))
out("first", [b.backend_type for b in reg._get_sorted_backends() if hasattr(b, "chunk_gated_delta_rule")][:1])
be = F._backend_object()
out("is_enabled", (type(be).is_enabled(), be.is_enabled()))
alog, dtb = T((4,), torch.float32), T((4,), torch.float32)
out("kw", op(q=q, k=k, v=v, g=g, beta=beta, initial_state=h0, output_final_state=True, chunk_size=64,
            use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True, use_gate_in_kernel=True, A_log=alog,
            dt_bias=dtb)[0])
out("kw_args", sorted(seen[-1].items(), key=lambda kv: kv[0]) == sorted(dict(scale=None, initial_state=h0,
    output_final_state=True, cu_seqlens=None, use_qk_l2norm_in_kernel=False, use_beta_sigmoid_in_kernel=True,
    allow_neg_eigval=True, use_gate_in_kernel=True, A_log=alog, dt_bias=dtb, state_v_first=False).items(),
    key=lambda kv: kv[0]))
cu = T((3,), torch.int32)
out("pos", op(q, k, v, g, beta, 0.5, None, False, True, False, False, False, cu)[0])
out("pos_args", seen[-1]["scale"] == 0.5 and seen[-1]["use_qk_l2norm_in_kernel"] is True and seen[-1]["cu_seqlens"] is cu)
out("served", F.counters()["served"])
out("logged", log.getvalue().count("FLA chunk_gated_delta_rule -> QLA ("))
q2, k2, _, _, _, _ = inputs(K=100)
out("K100", op(q2, k2, v, g, beta)[0])
out("K100_reason", F.counters()["last_rejection"])
out("f32", op(*inputs(dt=torch.float32)[:5])[0])
_, _, _, _, _, h0bf = inputs(h0=torch.bfloat16)
out("h0bf16", op(q, k, v, g, beta, initial_state=h0bf)[0])
out("h0bf16_reason", F.counters()["last_rejection"])
out("cs32", op(q, k, v, g, beta, chunk_size=32)[0])
out("rejected", F.counters()["rejected"])
os.environ["QLA_FLA_BACKEND"] = "0"
out("env0", op(q, k, v, g, beta)[0])
del os.environ["QLA_FLA_BACKEND"]
out("env_unset", op(q, k, v, g, beta)[0])
F.disable()
out("disabled", op(q, k, v, g, beta)[0])
out("removed", sorted(set(types(reg)) ^ set(own)))
F.enable()
out("reenabled", op(q, k, v, g, beta)[0])
out("served_total", F.counters()["served"])
'''


def in_ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def build_dir_of(lib):
    """The CMake build tree holding `lib` (the folder with CMakeCache.txt above it), or None."""
    d = os.path.dirname(os.path.abspath(lib))
    for _ in range(4):
        if os.path.isfile(os.path.join(d, "CMakeCache.txt")):
            return d
        d = os.path.dirname(d)
    return None


def wheel_version(path):
    m = WHEEL_NAME.search(os.path.basename(path))
    return m.group(2) if m else None


def pip_download(spec, dest):
    """(path of the fla-core wheel pip resolved `spec` to, None) or (None, why not)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "--no-input", "--timeout", "20", "--retries", "1", "-d", dest, spec]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"`pip download {spec}`: {e}"
    if p.returncode != 0:
        tail = " | ".join((p.stderr.strip() or p.stdout.strip()).splitlines()[-2:])
        return None, f"`pip download {spec}` failed: {tail}"
    names = [m[0] for m in WHEEL_NAME.findall(p.stdout)]  # "Saved .../X.whl" or "File was already downloaded .../X.whl"
    path = os.path.join(dest, names[-1]) if names else None
    if path is None or not zipfile.is_zipfile(path):
        return None, f"`pip download {spec}` named no fla-core wheel in {dest}: {p.stdout.strip()[-300:]}"
    return path, None


def fetch_wheels(dest):
    """[(label, wheel path or None, why not)] for the pinned releases and the newest one."""
    os.makedirs(dest, exist_ok=True)
    got = []
    for version in PINNED:
        have = [os.path.join(dest, f) for f in sorted(os.listdir(dest)) if wheel_version(f) == version]
        have = [p for p in have if zipfile.is_zipfile(p)]
        if have:
            got.append((f"fla-core {version}", have[0], None))
            continue
        path, why = pip_download(f"fla-core=={version}", dest)
        got.append((f"fla-core {version}", path, why))
    path, why = pip_download("fla-core", dest)   # the newest release, resolved again on every run
    version = wheel_version(path) if path else None
    if version not in PINNED:
        got.append((f"fla-core {version} (the newest release)" if version else "the newest fla-core", path, why))
    else:
        print(f"  (the newest fla-core is {version}, tested above)")
    return got


class Release:
    """The files of one FLA release: a wheel (zip) or a checkout (folder)."""

    def __init__(self, label, wheel=None, folder=None):
        self.label, self.wheel, self.folder = label, wheel, folder
        if wheel:
            with zipfile.ZipFile(wheel) as z:
                self._files = {n: z.read(n) for n in z.namelist()
                               if n.startswith("fla/") and not n.endswith("/")}
        else:
            self._files = {}
            for d, _, files in os.walk(os.path.join(folder, "fla")):
                for f in files:
                    if f.endswith(".py"):
                        full = os.path.join(d, f)
                        with open(full, "rb") as fh:
                            self._files[os.path.relpath(full, folder).replace(os.sep, "/")] = fh.read()

    def read(self, rel):
        return self._files.get(rel)

    def under(self, prefix):
        return sorted(n for n in self._files if n.startswith(prefix))


def gdn_op_source(chunk_py):
    """FLA's fla/ops/gated_delta_rule/chunk.py reduced to chunk_gated_delta_rule's
    decorators and signature (annotations dropped), the imports those decorators
    use (FLA's `dispatch`, torch) and the body `return ("fla", None)`."""
    tree = ast.parse(chunk_py)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "chunk_gated_delta_rule"), None)
    if fn is None:
        raise ValueError("chunk.py defines no chunk_gated_delta_rule")
    used = {n.id for d in fn.decorator_list for n in ast.walk(d) if isinstance(n, ast.Name)}
    if "dispatch" not in used:
        raise ValueError(f"chunk_gated_delta_rule is not decorated with FLA's dispatch: decorators use {sorted(used)}")
    body = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            names = node.names if node.module == "__future__" else \
                [a for a in node.names if (a.asname or a.name) in used]
            if names:
                body.append(ast.ImportFrom(module=node.module, names=names, level=node.level))
        elif isinstance(node, ast.Import):
            names = [a for a in node.names if (a.asname or a.name).split(".")[0] in used]
            if names:
                body.append(ast.Import(names=names))
    if not any(isinstance(n, ast.ImportFrom) and any(a.name == "dispatch" for a in n.names) for n in body):
        raise ValueError("chunk.py imports no `dispatch`")
    a = fn.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]:
        arg.annotation = None
    fn.returns = None
    fn.body = [ast.Return(ast.Tuple([ast.Constant("fla"), ast.Constant(None)], ast.Load()))]
    body.append(fn)
    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    return "# generated by test_fla_backend_cpu.py from FLA's chunk.py\n" + ast.unparse(module) + "\n"


def fused_recurrent_source(fr_py):
    """FLA's fla/ops/gated_delta_rule/fused_recurrent.py reduced to
    fused_recurrent_gated_delta_rule's signature (annotations dropped) and the
    body `return ("fla", None)`; None when the release has no such function."""
    tree = ast.parse(fr_py)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "fused_recurrent_gated_delta_rule"),
              None)
    if fn is None:
        return None
    a = fn.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x is not None]:
        arg.annotation = None
    fn.returns = None
    fn.decorator_list = []
    fn.body = [ast.Return(ast.Tuple([ast.Constant("fla"), ast.Constant(None)], ast.Load()))]
    module = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
    return "# generated by test_fla_backend_cpu.py from FLA's fused_recurrent.py\n" + ast.unparse(module) + "\n"


def stand_in_tree(release, base):
    """A folder with the release's real dispatch module and GDN backends package,
    copied unchanged, over stand-ins for torch, fla.utils and the GDN op.
    Returns (folder, description of its FLA files)."""
    tree = os.path.join(base, "tree")

    def put(rel, data):
        path = os.path.join(tree, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else textwrap.dedent(data).encode())

    dispatch = [n for n in release.under("fla/") if n == "fla/backends.py" or
                (n.startswith("fla/ops/backends/") and n.endswith(".py"))]
    if not dispatch:
        raise ValueError("it has neither fla/backends.py (FLA >= 0.6) nor fla/ops/backends/ (FLA 0.5): "
                         "qla.fla cannot find FLA's dispatch")
    gdn_backends = release.under("fla/ops/gated_delta_rule/backends/")
    chunk = release.read("fla/ops/gated_delta_rule/chunk.py")
    if chunk is None:
        raise ValueError("it has no fla/ops/gated_delta_rule/chunk.py")
    for n in dispatch + gdn_backends:
        put(n, release.read(n))                       # FLA's own code, unchanged
    put("fla/ops/gated_delta_rule/chunk.py", gdn_op_source(chunk.decode()))
    fr = release.read("fla/ops/gated_delta_rule/fused_recurrent.py")
    fr_src = fused_recurrent_source(fr.decode()) if fr is not None else None
    init = "from .chunk import chunk_gated_delta_rule\n"
    if fr_src is not None:
        # FLA's layout: the function in its module, re-exported by the package
        # and fla.ops, and a layer module that imported it by name.
        put("fla/ops/gated_delta_rule/fused_recurrent.py", fr_src)
        init += "from .fused_recurrent import fused_recurrent_gated_delta_rule\n"
        put("fla/layers/__init__.py", "")
        put("fla/layers/stand_in_layer.py", "from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule\n")
    put("fla/ops/gated_delta_rule/__init__.py", init)
    put("fla/__init__.py", "")
    put("fla/ops/__init__.py", "from .gated_delta_rule import fused_recurrent_gated_delta_rule\n" if fr_src else "")
    put("fla/utils.py", STUB_FLA_UTILS.format(trees=[os.path.realpath(base)]))
    put("torch/__init__.py", STUB_TORCH)
    put("flash_qla_stand_in/flash_qla/__init__.py", STUB_FLASH_QLA)
    files = ", ".join(dispatch) + (f", {len(gdn_backends)} files of fla/ops/gated_delta_rule/backends/"
                                   if gdn_backends else ", no GDN backends package")
    return tree, files


def dispatch_release(release, lib, tally):
    label = release.label

    def rcheck(name, ok, detail=""):
        check(f"[{label}] {name}", ok, detail)
        tally[label][0 if ok else 1] += 1

    base = os.path.realpath(tempfile.mkdtemp(prefix="qla-fla-stub-"))
    try:
        try:
            tree, files = stand_in_tree(release, base)
        except (ValueError, SyntaxError, OSError) as e:
            rcheck(f"its dispatch code over stand-ins: {e}", False)
            return
        print(f"  ({label}: {files}; chunk_gated_delta_rule generated from its chunk.py)")
        py = [tree, os.path.join(ROOT, "python")]

        def driver(pythonpath=py, **env):
            rc, out, err = run(DRIVER, pythonpath, QLA_LIBRARY=lib, **env)
            got = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
            return rc, got, out + err

        rc, got, detail = driver()
        expect = [
            ("before", "fla", "before enable(): FLA's own function"),
            ("signature", "ok", "FLA's chunk_gated_delta_rule has the parameters of QLA's verifier, in its order"),
            ("same_registry", "True", "enable() registers into the registry FLA's dispatch consults"),
            ("added", "['qla']", "enable() adds backend 'qla' to it (twice: once), FLA's own backends stay"),
            ("first", "['qla']", "'qla' is the first backend of chunk_gated_delta_rule (priority 1)"),
            ("is_enabled", "(True, True)", "the backend's is_enabled() on the class and on the instance"),
            ("kw", "qla", "keyword call inside the contract (h0, ht, chunk_size=64, beta sigmoid, neg eigval, "
                   "in-kernel gate) -> QLA's op"),
            ("kw_args", "True", "QLA's op gets scale, initial_state, output_final_state, cu_seqlens, l2norm, "
                                "use_beta_sigmoid_in_kernel, allow_neg_eigval, use_gate_in_kernel, A_log, dt_bias"),
            ("pos", "qla", "positional call (scale, l2norm, cu_seqlens in FLA's order) -> QLA's op"),
            ("pos_args", "True", "positional arguments reach QLA's op by name"),
            ("served", "2", "counters()['served'] counts them"),
            ("logged", "2", "each logged 'FLA chunk_gated_delta_rule -> QLA (...)' on logger 'qla'"),
            ("K100", "fla", "K = 100 -> FLA's function"),
            ("K100_reason", "QLA requires K in {64, 128, 256}, got K = 100", "the refusal's reason is kept"),
            ("f32", "fla", "f32 inputs -> FLA's function"),
            ("h0bf16", "fla", "bf16 initial_state -> FLA's function"),
            ("h0bf16_reason", "QLA requires an f32 initial_state, got bf16", "... refused for its dtype"),
            ("cs32", "fla", "chunk_size=32 -> FLA's function"),
            ("rejected", "4", "counters()['rejected'] counts the refusals"),
            ("env0", "fla", "QLA_FLA_BACKEND=0 at call time -> FLA's function"),
            ("env_unset", "qla", "QLA_FLA_BACKEND unset again -> QLA's op"),
            ("disabled", "fla", "disable() -> FLA's function"),
            ("removed", "[]", "disable() takes 'qla' out of the registry, FLA's own backends stay"),
            ("reenabled", "qla", "enable() after disable() -> QLA's op"),
            ("served_total", "4", "served count after re-enabling"),
        ]
        for key, want, what in expect:
            rcheck(f"dispatch: {what}", rc == 0 and got.get(key) == want,
                   f"{key}: got {got.get(key)!r}\n" + detail)
        own = got.get("own", "")
        rcheck("FLA's own GDN backends are in the registry before enable() (flash_qla among them)",
               rc == 0 and "'flash_qla'" in own, f"own: {own!r}\n" + detail)

        rc, got, detail = driver(pythonpath=py + [os.path.join(tree, "flash_qla_stand_in")], STEP="flash_qla")
        for key, want, what in [
            ("fq_before", "flash_qla", "before enable(): an sm_90 call goes to FLA's FlashQLA backend"),
            ("fq_order", "['qla', 'flash_qla']", "QLA (priority 1) is tried before FlashQLA (priority 3)"),
            ("fq_inside", "qla", "a call inside QLA's contract -> QLA, not FlashQLA"),
            ("fq_h0bf16", "flash_qla", "bf16 initial_state at K = V = 128: QLA refuses, FlashQLA's verifier "
                                       "accepts -> FlashQLA"),
            ("fq_h0bf16_reason", "QLA requires an f32 initial_state, got bf16", "... QLA's reason kept"),
            ("fq_K100", "fla", "K = 100: QLA and FlashQLA refuse -> FLA's function"),
            ("fq_disabled", "flash_qla", "disable(): FlashQLA serves the call again"),
        ]:
            rcheck(f"with FlashQLA installed: {what}", rc == 0 and got.get(key) == want,
                   f"{key}: got {got.get(key)!r}\n" + detail)

        if os.path.exists(os.path.join(tree, "fla", "ops", "gated_delta_rule", "fused_recurrent.py")):
            rc, got, detail = driver(STEP="fused_recurrent")
            for key, want, what in [
                ("fr_not_asked", "fla", "enable() alone leaves FLA's fused_recurrent_gated_delta_rule to FLA"),
                ("fr_patched", "[True, True, True, True]", "enable(fused_recurrent=True) replaces it in fla.ops, "
                                                           "its package, its module and a layer that imported it"),
                ("fr_inside", "qla", "a decode call inside the contract (GVA, h0, ht, L2 norm) -> QLA"),
                ("fr_args", "True", "QLA's op gets the call's arguments by name"),
                ("fr_layer", "qla", "... through the layer module's reference too"),
                ("fr_no_g", "qla", "g absent (no decay) -> QLA"),
                ("fr_gk", "fla", "per-channel decay gk -> FLA"),
                ("fr_gk_reason", "QLA's fused_recurrent does not take per-channel decays (gk, gv)",
                 "... with its reason"),
                ("fr_grad", "fla", "q requiring grad (QLA's decode has no backward) -> FLA"),
                ("fr_nograd", "qla", "... the same under no_grad -> QLA"),
                ("fr_counts", "(4, 2)", "fused_recurrent_counters() counts served and refused calls"),
                ("fr_restored", "[True, True, True, True]", "disable() puts FLA's function back everywhere"),
                ("fr_disabled", "fla", "after disable() -> FLA"),
            ]:
                rcheck(f"fused_recurrent: {what}", rc == 0 and got.get(key) == want,
                       f"{key}: got {got.get(key)!r}\n" + detail)
        else:
            print(f"  ({label}: no fused_recurrent_gated_delta_rule: its checks skipped)")

        rc, got, detail = driver(QLA_FLA_BACKEND="1", STEP="import")
        rcheck("dispatch: QLA_FLA_BACKEND=1 at import of qla.fla enables it",
               rc == 0 and got.get("import_enabled") == "True" and got.get("import_served") == "qla", detail)
        rc, got, detail = driver(FLA_DISABLE_BACKEND_DISPATCH="1", STEP="bypass")
        rcheck("dispatch: FLA_DISABLE_BACKEND_DISPATCH=1: enable() raises RuntimeError naming it",
               rc == 0 and got.get("before") == "fla" and got.get("bypass") == "True", detail)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def checkout_releases():
    """An FLA checkout ($FLA_SRC, else .fla in the source tree), if there is one."""
    for base in filter(None, (os.environ.get("FLA_SRC"), os.path.join(ROOT, ".fla"))):
        if os.path.isfile(os.path.join(base, "fla", "backends.py")) or \
                os.path.isfile(os.path.join(base, "fla", "ops", "backends", "__init__.py")):
            version = "?"
            try:
                with open(os.path.join(base, "fla", "__init__.py")) as f:
                    m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", f.read())
                    version = m.group(1) if m else version
            except OSError:
                pass
            return [Release(f"FLA checkout {version} at {base}", folder=base)]
    return []


def dispatch(lib, wheels):
    if lib is None:
        print("  SKIP  FLA's dispatch over stand-ins: no libqla.so given (enable() loads it)")
        return
    tmp = None
    if wheels is None:
        build = build_dir_of(lib)
        if build is not None:
            wheels = os.path.join(build, "fla-wheels")
        else:
            tmp = wheels = tempfile.mkdtemp(prefix="qla-fla-wheels-")
    print(f"  (fla-core wheels in {wheels}{', removed afterwards' if tmp else ''})")
    try:
        releases = []
        for label, path, why in fetch_wheels(wheels):
            if path is None:
                if in_ci():
                    check(f"[{label}] wheel: {why}", False)
                else:
                    print(f"  SKIP  [{label}] FLA's dispatch over stand-ins: {why}")
                continue
            try:
                releases.append(Release(label, wheel=path))
            except (zipfile.BadZipFile, OSError) as e:
                check(f"[{label}] reading {path}: {e}", False)
        releases += checkout_releases()
        tally = {r.label: [0, 0] for r in releases}
        for r in releases:
            dispatch_release(r, lib, tally)
        for label, (passed, failed) in tally.items():
            print(f"  {label}: {passed} PASS, {failed} FAIL")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def log_switch():
    code = ("import qla.fla, logging\nlogging.getLogger('qla').info('FLA chunk_gated_delta_rule -> QLA (x)')\n")
    rc, out, err = run(code, [os.path.join(ROOT, "python")], QLA_LOG="info")
    check("QLA_LOG=info: the 'qla' logger writes 'qla: +Tms pid=P info: ...' to stderr",
          rc == 0 and "info: FLA chunk_gated_delta_rule -> QLA (x)" in err and err.startswith("qla: +"),
          out + err)
    rc, out, err = run(code, [os.path.join(ROOT, "python")])
    check("QLA_LOG unset: nothing logged", rc == 0 and err == "", out + err)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lib", nargs="?", help="BUILD/compiler/libqla.so (default: build/compiler/libqla.so if built)")
    ap.add_argument("--wheels", help="folder caching the fla-core wheels (default: BUILD/fla-wheels of lib's "
                                     "build tree, else a temporary folder)")
    args = ap.parse_args()
    lib = os.path.abspath(args.lib) if args.lib else None
    if lib is None:
        cand = os.path.join(ROOT, "build", "compiler", "libqla.so")
        lib = cand if os.path.isfile(cand) else None
    print("1. imports")
    imports(lib)
    print("2. the verifier's core (qla.fla.check)")
    contract()
    print("3. FLA's dispatch over stand-ins, per FLA release")
    dispatch(lib, os.path.abspath(args.wheels) if args.wheels else None)
    print("4. the log switch")
    log_switch()
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
