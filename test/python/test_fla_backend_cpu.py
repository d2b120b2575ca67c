"""qla.fla (QLA as a backend of FLA's chunk_gated_delta_rule) without torch,
FLA or a GPU:

  1. `import qla` imports neither qla.fla nor FLA; `import qla.fla` needs
     neither torch nor FLA; enable() without FLA (and QLA_FLA_BACKEND=1 at
     import) raise an ImportError that says what is missing.
  2. The verifier's core, qla.fla.check, on a table of argument descriptions
     (in and out of QLA's contract, one row per rule), and agreeing with
     test/gpu/fla_gdn_tests.py's classification of FLA's test cases.
  3. FLA's real dispatch (fla/ops/backends/__init__.py of an FLA checkout:
     $FLA_SRC, else .fla in the source tree; skipped if neither has it) over
     stand-ins for torch, fla.utils and the GDN op: enable() registers QLA in
     the gated_delta_rule registry, a call inside the contract reaches QLA's op
     (logged "FLA chunk_gated_delta_rule -> QLA", counted), calls outside it
     fall back to FLA's function, QLA_FLA_BACKEND=0 at call time and disable()
     give FLA's dispatch back, QLA_FLA_BACKEND=1 at import enables,
     FLA_DISABLE_BACKEND_DISPATCH=1 makes enable() refuse.

    python3 test/python/test_fla_backend_cpu.py [BUILD/compiler/libqla.so]

(test_package.py runs it as part of ctest's python_package.) Each check
prints PASS or FAIL; exit status 1 on any failure.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

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
    check("enable() without FLA: ImportError naming flash-linear-attention and fla.ops.backends",
          rc == 0 and "flash-linear-attention" in out and "fla.ops.backends" in out, out + err)
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

        ("K = 100", E(), call(K=100), False, "K in {64, 128}"),
        ("K = 256", E(), call(K=256), False, "K in {64, 128}"),
        ("V = 60", E(), call(K=64, V=60), False, "V in {64, 128}"),
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
         False, "use_gate_in_kernel"),
        ("A_log given", E(), change(base, A_log=T("float32", (4,))), False, "A_log"),
        ("dt_bias given", E(), change(base, dt_bias=T("float32", (4,))), False, "dt_bias"),
        ("use_beta_sigmoid_in_kernel=True", E(), change(base, use_beta_sigmoid_in_kernel=True), False,
         "use_beta_sigmoid_in_kernel"),
        ("allow_neg_eigval=True", E(), change(base, allow_neg_eigval=True), False, "allow_neg_eigval"),
        ("state_v_first=True", E(), change(base, state_v_first=True), False, "state_v_first"),
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
    ok, reason = F.check(E(), a["q"], a["k"], a["v"], a["g"], a["beta"], None, a["initial_state"], True, False, True)
    check("check: positional use_beta_sigmoid_in_kernel=True refused", not ok and "beta_sigmoid" in reason, reason)

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


# ----------------------------------------------------------------------------
# 3. FLA's dispatch over stand-ins
# ----------------------------------------------------------------------------

STUB_TORCH = '''
"""A stand-in for the few names of torch that fla.ops.backends and qla.fla use."""
import contextlib

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

STUB_GDN_OP = '''
from fla.ops.backends import dispatch

@dispatch("gated_delta_rule")
def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                           use_qk_l2norm_in_kernel=False, use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                           state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, chunk_indices=None,
                           cp_context=None, **kwargs):
    return ("fla", None)
'''

STUB_GDN_BACKENDS = '''
from fla.ops.backends import BackendRegistry, dispatch
gdr_registry = BackendRegistry("gated_delta_rule")
__all__ = ["dispatch", "gdr_registry"]
'''

DRIVER = r'''
import io, logging, os, sys
import torch
import qla, qla.gdn
import qla.fla as F
from fla.ops.gated_delta_rule import chunk_gated_delta_rule as op
from fla.ops.gated_delta_rule.backends import gdr_registry

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

q, k, v, g, beta, h0 = inputs()
out("before", op(q, k, v, g, beta)[0])
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
F.enable()
F.enable()  # idempotent
out("registered", sorted(gdr_registry._backends))
out("kw", op(q=q, k=k, v=v, g=g, beta=beta, initial_state=h0, output_final_state=True, chunk_size=64)[0])
out("kw_args", sorted(seen[-1].items()) == sorted(dict(scale=None, initial_state=h0, output_final_state=True,
    cu_seqlens=None, use_qk_l2norm_in_kernel=False).items()))
cu = T((3,), torch.int32)
out("pos", op(q, k, v, g, beta, 0.5, None, False, True, False, False, False, cu)[0])
out("pos_args", seen[-1]["scale"] == 0.5 and seen[-1]["use_qk_l2norm_in_kernel"] is True and seen[-1]["cu_seqlens"] is cu)
out("served", F.counters()["served"])
out("logged", log.getvalue().count("FLA chunk_gated_delta_rule -> QLA ("))
q2, k2, _, _, _, _ = inputs(K=100)
out("K100", op(q2, k2, v, g, beta)[0])
out("K100_reason", F.counters()["last_rejection"])
out("f32", op(*inputs(dt=torch.float32)[:5])[0])
out("h0bf16", op(*inputs(h0=torch.bfloat16))[0])
out("cs32", op(q, k, v, g, beta, chunk_size=32)[0])
out("rejected", F.counters()["rejected"])
os.environ["QLA_FLA_BACKEND"] = "0"
out("env0", op(q, k, v, g, beta)[0])
del os.environ["QLA_FLA_BACKEND"]
out("env_unset", op(q, k, v, g, beta)[0])
F.disable()
out("disabled", op(q, k, v, g, beta)[0])
out("registered_after", sorted(gdr_registry._backends))
F.enable()
out("reenabled", op(q, k, v, g, beta)[0])
out("served_total", F.counters()["served"])
'''


def find_fla_backends():
    for base in filter(None, (os.environ.get("FLA_SRC"), os.path.join(ROOT, ".fla"))):
        p = os.path.join(base, "fla", "ops", "backends", "__init__.py")
        if os.path.isfile(p):
            return p
    return None


def dispatch(lib):
    src = find_fla_backends()
    if src is None:
        print("  SKIP  FLA's dispatch over stand-ins: no fla/ops/backends/__init__.py under $FLA_SRC or .fla")
        return
    if lib is None:
        print("  SKIP  FLA's dispatch over stand-ins: no libqla.so given (enable() loads it)")
        return
    tmp = tempfile.mkdtemp(prefix="qla-fla-stub-")
    try:
        def put(rel, text):
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(textwrap.dedent(text))
        put("torch/__init__.py", STUB_TORCH)
        put("fla/__init__.py", "")
        put("fla/utils.py", "import importlib.util\n"
                            "def find_spec_cached(name):\n    return importlib.util.find_spec(name)\n")
        put("fla/ops/__init__.py", "")
        os.makedirs(os.path.join(tmp, "fla", "ops", "backends"))
        shutil.copy(src, os.path.join(tmp, "fla", "ops", "backends", "__init__.py"))  # FLA's own dispatch, unchanged
        put("fla/ops/gated_delta_rule/__init__.py", "from .chunk import chunk_gated_delta_rule\n")
        put("fla/ops/gated_delta_rule/chunk.py", STUB_GDN_OP)
        put("fla/ops/gated_delta_rule/backends/__init__.py", STUB_GDN_BACKENDS)
        py = [tmp, os.path.join(ROOT, "python")]
        rc, out, err = run(DRIVER, py, QLA_LIBRARY=lib)
        got = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
        detail = out + err
        print(f"  (FLA's dispatch from {src})")
        expect = [
            ("before", "fla", "before enable(): FLA's own function"),
            ("registered", "['qla']", "enable() registers backend 'qla' in gdr_registry (twice: once)"),
            ("kw", "qla", "keyword call inside the contract (h0, ht, chunk_size=64) -> QLA's op"),
            ("kw_args", "True", "QLA's op gets scale, initial_state, output_final_state, cu_seqlens, l2norm"),
            ("pos", "qla", "positional call (scale, l2norm, cu_seqlens in FLA's order) -> QLA's op"),
            ("pos_args", "True", "positional arguments reach QLA's op by name"),
            ("served", "2", "counters()['served'] counts them"),
            ("logged", "2", "each logged 'FLA chunk_gated_delta_rule -> QLA (...)' on logger 'qla'"),
            ("K100", "fla", "K = 100 -> FLA's function"),
            ("K100_reason", "QLA requires K in {64, 128}, got K = 100", "the refusal's reason is kept"),
            ("f32", "fla", "f32 inputs -> FLA's function"),
            ("h0bf16", "fla", "bf16 initial_state -> FLA's function"),
            ("cs32", "fla", "chunk_size=32 -> FLA's function"),
            ("rejected", "4", "counters()['rejected'] counts the refusals"),
            ("env0", "fla", "QLA_FLA_BACKEND=0 at call time -> FLA's function"),
            ("env_unset", "qla", "QLA_FLA_BACKEND unset again -> QLA's op"),
            ("disabled", "fla", "disable() -> FLA's function"),
            ("registered_after", "[]", "disable() takes 'qla' out of gdr_registry"),
            ("reenabled", "qla", "enable() after disable() -> QLA's op"),
            ("served_total", "4", "served count after re-enabling"),
        ]
        for key, want, what in expect:
            check(f"dispatch: {what}", rc == 0 and got.get(key) == want, f"{key}: got {got.get(key)!r}\n" + detail)
        rc, out, err = run(DRIVER, py, QLA_LIBRARY=lib, QLA_FLA_BACKEND="1", STEP="import")
        got = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
        check("dispatch: QLA_FLA_BACKEND=1 at import of qla.fla enables it",
              rc == 0 and got.get("import_enabled") == "True" and got.get("import_served") == "qla", out + err)
        rc, out, err = run(DRIVER, py, QLA_LIBRARY=lib, FLA_DISABLE_BACKEND_DISPATCH="1", STEP="bypass")
        got = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
        check("dispatch: FLA_DISABLE_BACKEND_DISPATCH=1: enable() raises RuntimeError naming it",
              rc == 0 and got.get("bypass") == "True", out + err)
        code = ("import qla.fla, logging\nlogging.getLogger('qla').info('FLA chunk_gated_delta_rule -> QLA (x)')\n")
        rc, out, err = run(code, [os.path.join(ROOT, "python")], QLA_LOG="info")
        check("QLA_LOG=info: the 'qla' logger writes 'qla: +Tms pid=P info: ...' to stderr",
              rc == 0 and "info: FLA chunk_gated_delta_rule -> QLA (x)" in err and err.startswith("qla: +"),
              out + err)
        rc, out, err = run(code, [os.path.join(ROOT, "python")])
        check("QLA_LOG unset: nothing logged", rc == 0 and err == "", out + err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    lib = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    if lib is None:
        cand = os.path.join(ROOT, "build", "compiler", "libqla.so")
        lib = cand if os.path.isfile(cand) else None
    print("1. imports")
    imports(lib)
    print("2. the verifier's core (qla.fla.check)")
    contract()
    print("3. FLA's dispatch over stand-ins")
    dispatch(lib)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
