"""QLA as a backend of flash-linear-attention (FLA): FLA's own
``fla.ops.gated_delta_rule.chunk_gated_delta_rule`` runs on QLA's GDN kernels
for every call inside QLA's contract (docs/gdn.md, "Contract"), forward and
backward, and on FLA's Triton kernels for everything else.

    import qla.fla
    qla.fla.enable()          # or QLA_FLA_BACKEND=1 in the environment, read when qla.fla is imported
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    o, ht = chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)   # on QLA
    qla.fla.disable()         # FLA's dispatch as it was

How it plugs in: FLA's public ops are decorated with FLA's ``dispatch``
(``fla.backends`` in FLA >= 0.6, one file ``fla/backends.py``;
``fla.ops.backends`` in FLA 0.5). On each call the decorator walks the
op's ``BackendRegistry`` for "gated_delta_rule" (FLA 0.6: the registry
``fla.backends`` keeps per operation, filled by
``fla/ops/gated_delta_rule/backends/``; FLA 0.5: ``gdr_registry`` in that
package; both hold FLA's FlashQLA backend, priority 3) in priority order,
asks every available and enabled ``BaseBackend`` its
``chunk_gated_delta_rule_verifier(...)`` (same arguments as the call) and
runs the first accepting backend's ``chunk_gated_delta_rule``; when none
accepts, FLA's own (Triton) implementation runs. :func:`enable` finds
whichever dispatch module the installed FLA has, loads FLA's own GDN
backends first, and registers a ``BaseBackend`` subclass of that kind
(``backend_type = "qla"``, priority 1: tried before FlashQLA) into that
registry; :func:`disable` switches it off and takes it out of the registry.
FLA has one entry point for both directions: QLA's op is a
``torch.autograd.Function``, so a call QLA serves also runs its backward on
QLA.

The verifier accepts exactly QLA's contract: q, k, v bf16 or f16 (one dtype)
on one sm_90 GPU, [B, T, Hqk, K] / [B, T, Hv, V] with Hv % Hqk == 0 and K, V
in {64, 128, 256}; g and beta [B, T, Hv] in f32 or q's dtype; a finite scale or
None; an f32 initial state [N, Hv, K, V]; int32/int64 cu_seqlens with B = 1;
chunk size 64 (FLA's ``chunk_size`` keyword absent or 64);
use_beta_sigmoid_in_kernel and allow_neg_eigval (the kernels compute beta);
use_gate_in_kernel with A_log (and dt_bias) of shape [Hv] (the kernels
compute the gate); state_v_first (states [N, Hv, V, K], transposed around
the kernels); none of the deprecated transpose_state_layout, cp_context,
head_first, nor any keyword QLA does not know. FLA's precomputed helpers of
cu_seqlens (cu_seqlens_cpu, chunk_indices) are accepted and not used. The
decision is :func:`check`, a pure function of argument descriptions (dtype
names, shapes, device names, flags): no torch, no FLA needed to test it.

Switches: QLA_FLA_BACKEND=1 (or on/true/yes) when qla.fla is imported calls
:func:`enable`; QLA_FLA_BACKEND=0 (or off/false/no) at call time switches the
backend off as FLA_FLASH_QLA=0 does FlashQLA's. FLA_DISABLE_BACKEND_DISPATCH=1
(FLA's, read when FLA is imported) bypasses all of FLA's dispatch, so
:func:`enable` refuses then. FLA 0.6's ``FLA_<BACKEND_TYPE>`` switch
(``FLA_QLA``) is not consulted: QLA's backend decides with QLA_FLA_BACKEND.

Log: every call QLA serves logs "FLA chunk_gated_delta_rule -> QLA (...)" at
info on ``logging.getLogger("qla")``; a refused call logs the reason at debug
(FLA's logger, ``fla.backends`` or ``fla.ops.backends``, logs each backend's
first refusal at info). QLA_LOG=info (or debug), the switch of QLA's C++ log,
also gives that logger a handler writing "qla: +Tms pid=P info: ..." lines to
stderr or QLA_LOG_FILE, unless it already has one. :func:`counters` counts served and
refused calls.

Decode: ``enable(fused_recurrent=True)`` also serves FLA's
``fused_recurrent_gated_delta_rule`` (forward only) where
:func:`check_fused_recurrent` accepts; FLA has no dispatch for it, so the
function object is replaced in FLA's loaded modules and put back by
:func:`disable`.

Importing this module needs neither torch nor FLA; :func:`enable` imports
FLA and raises ImportError naming what is missing.
"""
from __future__ import annotations

import contextlib
import importlib
import logging
import math
import numbers
import os
import threading
from typing import Any, NamedTuple

__all__ = ["enable", "disable", "is_enabled", "check", "TensorDesc", "Environment", "counters", "reset_counters",
           "ENV_VAR", "BACKEND_TYPE", "PRIORITY"]

ENV_VAR = "QLA_FLA_BACKEND"
BACKEND_TYPE = "qla"
PRIORITY = 1            # FLA: lower is tried first; FlashQLA is 3, the Ascend NPU backend 0 (NPU only)
_OPERATION = "gated_delta_rule"

_OFF = ("", "0", "off", "false", "no", "none")

_log = logging.getLogger("qla")


# ----------------------------------------------------------------------------
# The contract, as a pure function of argument descriptions
# ----------------------------------------------------------------------------

class TensorDesc(NamedTuple):
    """What the verifier needs to know of one tensor argument."""
    dtype: str                  # torch's dtype name without "torch.": "bfloat16", "float16", "float32", "int32", ...
    shape: tuple                # sizes
    device: str = "cuda:0"      # str(tensor.device): "cuda:0", "cpu"
    requires_grad: bool = False


class Environment(NamedTuple):
    """Facts of the process, not of the arguments."""
    capability: tuple | None = (9, 0)  # compute capability of q's device (None: q is not on a CUDA device)
    grad_enabled: bool = True          # torch.is_grad_enabled()
    has_backward: bool = True          # libqla.so has qla_gdn_backward
    capturing: bool = False            # torch.cuda.is_current_stream_capturing()


_INPUT_DTYPES = ("bfloat16", "float16")
_SHORT = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64", "int32": "int32",
          "int64": "int64"}
# FLA keywords (beyond the named parameters) QLA takes, with the values it takes.
# use_gate_in_kernel, A_log and dt_bias are checked below (the gate's
# parameters, with Hv known).
_KW_OK = {"use_gate_in_kernel": lambda x: isinstance(x, bool) or x in (0, 1),
          "chunk_size": lambda x: isinstance(x, int) and not isinstance(x, bool) and x == 64,
          "A_log": lambda x: True,
          "dt_bias": lambda x: True}
_KW_WHY = {"chunk_size": "QLA's chunks are 64 tokens",
           "use_gate_in_kernel": "QLA takes use_gate_in_kernel as a bool"}


def _d(x: TensorDesc) -> str:
    return _SHORT.get(x.dtype, x.dtype)


def _shape(x: TensorDesc) -> list:
    return [int(n) for n in x.shape]


def check(env: Environment, q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
          use_qk_l2norm_in_kernel=False, use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
          state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, chunk_indices=None, cp_context=None,
          **kwargs) -> tuple[bool, str | None]:
    """(True, None) when QLA serves this call of FLA's chunk_gated_delta_rule,
    else (False, the reason). The arguments are FLA's (same names, same
    order), with every tensor given as a :class:`TensorDesc` (anything else
    in a tensor's place is refused), after the process facts `env`. Pure: no
    torch, no FLA, no side effects."""
    # Options QLA does not have (FLA computes them).
    if cp_context is not None:
        return False, "QLA does not take cp_context (FLA's inter-card context parallelism)"
    # use_beta_sigmoid_in_kernel and allow_neg_eigval: taken (the kernels
    # compute beta = sigmoid(beta), or 2 sigmoid(beta)).
    # state_v_first: taken (the states are transposed around the kernels).
    if "transpose_state_layout" in kwargs:
        return False, "QLA does not take the deprecated transpose_state_layout (FLA handles it)"
    if "head_first" in kwargs:
        return False, "QLA does not take head_first (FLA rejects it)"
    for name in _KW_OK:  # in this order: use_gate_in_kernel explains A_log
        if name in kwargs and not _KW_OK[name](kwargs[name]):
            x = kwargs[name]
            given = f"{name}={x!r}" if isinstance(x, (bool, int, float, str)) else f"{name} (given)"
            return False, f"QLA does not take {given}: {_KW_WHY[name]}"
    for name in sorted(kwargs):
        if name not in _KW_OK:
            return False, f"QLA does not know the keyword {name}= (FLA handles the call)"

    # q, k, v, g, beta: tensors on one sm_90 GPU.
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta)):
        if not isinstance(t, TensorDesc):
            return False, f"QLA requires {name} to be a tensor, got {type(t).__name__}"
    if not q.device.startswith("cuda"):
        return False, f"QLA requires CUDA tensors, q is on {q.device}"
    if env.capability is None or tuple(env.capability) != (9, 0):
        cap = "unknown" if env.capability is None else "sm_%d%d" % tuple(env.capability)
        return False, f"QLA's GDN kernels are sm_90a (Hopper); {q.device} is {cap}"
    for name, t in (("k", k), ("v", v), ("g", g), ("beta", beta), ("initial_state", initial_state)):
        if isinstance(t, TensorDesc) and t.device != q.device:
            return False, f"QLA requires every tensor on q's device {q.device}, {name} is on {t.device}"

    # dtypes and shapes.
    if q.dtype not in _INPUT_DTYPES:
        return False, f"QLA requires q, k, v in bf16 or f16, got {_d(q)}"
    if k.dtype != q.dtype or v.dtype != q.dtype:
        return False, f"QLA requires q, k, v in one dtype, got {_d(q)}, {_d(k)}, {_d(v)}"
    if len(q.shape) != 4 or len(k.shape) != 4 or len(v.shape) != 4:
        return False, (f"QLA requires 4-dim q, k [B, T, Hqk, K] and v [B, T, Hv, V], got shapes {_shape(q)}, "
                       f"{_shape(k)}, {_shape(v)}")
    B, T, Hqk, K = _shape(q)
    Hv, V = int(v.shape[2]), int(v.shape[3])
    if _shape(k) != _shape(q):
        return False, f"QLA requires k of q's shape {_shape(q)}, got {_shape(k)}"
    if _shape(v)[:2] != [B, T]:
        return False, f"QLA requires v's B and T to be q's, got v {_shape(v)} and q {_shape(q)}"
    if min(B, T, Hqk, Hv) < 1:
        return False, f"QLA requires non-empty inputs, got q {_shape(q)} and v {_shape(v)}"
    if Hv % Hqk != 0:
        return False, f"QLA requires Hv % Hqk == 0, got Hv = {Hv}, Hqk = {Hqk}"
    if K not in (64, 128, 256):
        return False, f"QLA requires K in {{64, 128, 256}}, got K = {K}"
    if V not in (64, 128, 256):
        return False, f"QLA requires V in {{64, 128, 256}}, got V = {V}"
    for name, t in (("g", g), ("beta", beta)):
        if t.dtype != "float32" and t.dtype != q.dtype:
            return False, f"QLA requires {name} in f32 or {_d(q)} (the dtype of q), got {_d(t)}"
        if _shape(t) != [B, T, Hv]:
            return False, f"QLA requires {name} of shape [B, T, Hv] = {[B, T, Hv]}, got {_shape(t)}"

    # scale.
    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
            return False, f"QLA requires scale to be None or a number, got {type(scale).__name__}"
        if not math.isfinite(scale):
            return False, f"QLA requires a finite scale, got {scale}"

    # cu_seqlens.
    N = B
    if cu_seqlens is not None:
        if not isinstance(cu_seqlens, TensorDesc):
            return False, f"QLA requires cu_seqlens to be a tensor, got {type(cu_seqlens).__name__}"
        if cu_seqlens.dtype not in ("int32", "int64"):
            return False, f"QLA requires cu_seqlens in int32 or int64, got {_d(cu_seqlens)}"
        if len(cu_seqlens.shape) != 1 or int(cu_seqlens.shape[0]) < 2:
            return False, f"QLA requires cu_seqlens of shape [N + 1] with N >= 1, got {_shape(cu_seqlens)}"
        if B != 1:
            return False, f"QLA requires B = 1 with cu_seqlens, got B = {B}"
        if cu_seqlens.device not in (q.device, "cpu"):
            return False, f"QLA requires cu_seqlens on q's device {q.device} or the CPU, got {cu_seqlens.device}"
        if cu_seqlens.device == "cpu" and env.capturing:
            return False, "QLA requires cu_seqlens on the GPU while a CUDA graph is being captured"
        N = int(cu_seqlens.shape[0]) - 1
    for name, t in (("cu_seqlens_cpu", cu_seqlens_cpu), ("chunk_indices", chunk_indices)):
        if t is not None and not isinstance(t, TensorDesc):
            return False, f"QLA requires {name} to be None or a tensor, got {type(t).__name__}"

    # initial_state.
    if initial_state is not None:
        if not isinstance(initial_state, TensorDesc):
            return False, f"QLA requires initial_state to be a tensor, got {type(initial_state).__name__}"
        if initial_state.dtype != "float32":
            return False, f"QLA requires an f32 initial_state, got {_d(initial_state)}"
        want = [N, Hv, V, K] if state_v_first else [N, Hv, K, V]
        layout = "[N, Hv, V, K] (state_v_first)" if state_v_first else "[N, Hv, K, V]"
        if _shape(initial_state) != want:
            return False, f"QLA requires initial_state of shape {layout} = {want}, got {_shape(initial_state)}"

    # The in-kernel gate (A_log and dt_bias without it: FLA ignores them, so does QLA).
    gate = bool(kwargs.get("use_gate_in_kernel", False))
    A_log, dt_bias = (kwargs.get("A_log"), kwargs.get("dt_bias")) if gate else (None, None)
    if gate:
        if A_log is None:
            return False, "QLA requires A_log with use_gate_in_kernel=True (FLA raises too)"
        for name, t in (("A_log", A_log), ("dt_bias", dt_bias)):
            if t is None:
                continue
            if not isinstance(t, TensorDesc):
                return False, f"QLA requires {name} to be a tensor, got {type(t).__name__}"
            if t.device != q.device:
                return False, f"QLA requires every tensor on q's device {q.device}, {name} is on {t.device}"
            if not t.dtype.startswith("float") and t.dtype not in ("bfloat16",):
                return False, f"QLA requires {name} in a float dtype, got {_d(t)}"
            if _shape(t) != [Hv]:
                return False, f"QLA requires {name} of shape [Hv] = {[Hv]}, got {_shape(t)}"

    # The backward.
    if env.grad_enabled and not env.has_backward:
        for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("initial_state", initial_state),
                        ("A_log", A_log), ("dt_bias", dt_bias)):
            if isinstance(t, TensorDesc) and t.requires_grad:
                return False, f"{name} requires grad but this libqla.so has no backward (qla_gdn_backward)"
    return True, None


def check_fused_recurrent(env: Environment, q, k, v, g=None, gk=None, gv=None, beta=None, scale=None,
                          initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=False,
                          use_gate_in_kernel=False, A_log=None, dt_bias=None, use_beta_sigmoid_in_kernel=False,
                          allow_neg_eigval=False, state_v_first=False, cu_seqlens=None,
                          **kwargs) -> tuple[bool, str | None]:
    """(True, None) when QLA serves this call of FLA's
    fused_recurrent_gated_delta_rule (qla.gdn.fused_recurrent_gated_delta_rule:
    forward only), else (False, the reason). FLA's arguments in FLA's order,
    tensors as :class:`TensorDesc`. As :func:`check`, plus: g or beta may be
    None (no decay; beta 1), no per-channel decays (gk, gv), no cu_seqlens,
    and no tensor that requires grad while grad is enabled (QLA's decode
    kernel has no backward). Pure: no torch, no FLA."""
    if gk is not None or gv is not None:
        return False, "QLA's fused_recurrent does not take per-channel decays (gk, gv)"
    if cu_seqlens is not None:
        return False, "QLA's fused_recurrent does not take cu_seqlens (B sequences of T tokens only)"
    if kwargs:
        return False, f"QLA's fused_recurrent does not know the keyword {sorted(kwargs)[0]}= (FLA handles the call)"
    if env.grad_enabled:
        for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("initial_state", initial_state),
                        ("A_log", A_log), ("dt_bias", dt_bias)):
            if isinstance(t, TensorDesc) and t.requires_grad:
                return False, f"{name} requires grad: QLA's fused_recurrent is forward only (FLA's has a backward)"
    if not all(isinstance(t, TensorDesc) for t in (q, v)) or len(q.shape) != 4 or len(v.shape) != 4:
        return False, "QLA requires 4-dim tensors q [B, T, Hqk, K] and v [B, T, Hv, V]"
    stand_in = TensorDesc("float32", (int(q.shape[0]), int(q.shape[1]), int(v.shape[2])), q.device)
    kw = {"use_gate_in_kernel": bool(use_gate_in_kernel)}
    if use_gate_in_kernel:
        kw["A_log"], kw["dt_bias"] = A_log, dt_bias
    return check(env._replace(has_backward=True), q, k, v, stand_in if g is None else g,
                 stand_in if beta is None else beta, scale=scale, initial_state=initial_state,
                 output_final_state=output_final_state, use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                 use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel, allow_neg_eigval=allow_neg_eigval,
                 state_v_first=state_v_first, **kw)


# ----------------------------------------------------------------------------
# State, counters, log
# ----------------------------------------------------------------------------

_lock = threading.RLock()
_enabled = False
_backend = None          # the registered backend object
_registry = None         # FLA's BackendRegistry of "gated_delta_rule" (FLA 0.5: gdr_registry)
_backend_cls = None
_available: bool | None = None
_has_backward = True
_capabilities: dict = {}
_counts = {"served": 0, "rejected": 0, "last_rejection": None}


def counters() -> dict:
    """{"served": calls QLA ran, "rejected": calls its verifier refused,
    "last_rejection": the last refusal's reason or None} since import or
    :func:`reset_counters`."""
    return dict(_counts)


def reset_counters() -> None:
    _counts.update(served=0, rejected=0, last_rejection=None)


def _env_off() -> bool:
    v = os.environ.get(ENV_VAR)
    return v is not None and v.strip().lower() in _OFF


def is_enabled() -> bool:
    """Whether FLA's dispatch may pick QLA now (enabled and QLA_FLA_BACKEND is not 0)."""
    return _enabled and not _env_off()


class _Formatter(logging.Formatter):
    def format(self, record):
        msg = record.getMessage().replace("\n", " | ")
        return "qla: +%.3fms pid=%d %s: %s" % (record.relativeCreated, record.process, record.levelname.lower(), msg)


def _configure_log() -> None:
    """QLA_LOG=info/debug (QLA's C++ log switch; same words) gives the "qla"
    logger a handler unless it or the application configured one."""
    v = os.environ.get("QLA_LOG")
    if v is None:
        return
    s = "".join(v.split()).lower()
    if s in ("info", "1", "on", "true", "yes"):
        level = logging.INFO
    elif s in ("debug", "2", "all"):
        level = logging.DEBUG
    else:
        return
    if _log.handlers:
        return
    path = os.environ.get("QLA_LOG_FILE")
    try:
        h = logging.FileHandler(path, mode="a") if path else logging.StreamHandler()
    except OSError:
        h = logging.StreamHandler()
    h.setFormatter(_Formatter())
    _log.addHandler(h)
    _log.setLevel(level)
    _log.propagate = False


_configure_log()


# ----------------------------------------------------------------------------
# The torch-facing side
# ----------------------------------------------------------------------------

def _dtype_name(dtype) -> str:
    s = str(dtype)
    return s[len("torch."):] if s.startswith("torch.") else s


def _desc(x):
    """A TensorDesc for a torch.Tensor; anything else as it is."""
    import torch

    if isinstance(x, torch.Tensor):
        return TensorDesc(_dtype_name(x.dtype), tuple(x.shape), str(x.device), bool(x.requires_grad))
    return x


def _capability(t):
    import torch

    if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
        return None
    i = t.device.index if t.device.index is not None else torch.cuda.current_device()
    cap = _capabilities.get(i)
    if cap is None:
        cap = _capabilities[i] = tuple(torch.cuda.get_device_capability(i))
    return cap


def _is_available() -> bool:
    """A CUDA device and a loadable libqla.so (checked once)."""
    global _available, _has_backward
    if _available is None:
        try:
            import torch

            from . import gdn
            lib = gdn._lib()
            _has_backward = hasattr(lib, "qla_gdn_backward")
            _available = bool(torch.cuda.is_available())
            if not _available:
                _log.warning("qla.fla: FLA backend: no CUDA device; FLA's chunk_gated_delta_rule stays on FLA")
        except Exception as e:  # noqa: BLE001  (libqla.so missing or unloadable: FLA keeps its own)
            _available = False
            _log.warning("qla.fla: FLA backend: QLA is not usable (%s); FLA's chunk_gated_delta_rule stays on FLA", e)
    return _available


def _summary(q, v, g, beta, initial_state, output_final_state, cu_seqlens, l2) -> str:
    import torch

    B, T, Hqk, K = q.shape
    parts = [f"{_SHORT.get(_dtype_name(q.dtype))} B={B} T={T} Hqk={Hqk} Hv={v.shape[2]} K={K} V={v.shape[3]}",
             f"g {_SHORT.get(_dtype_name(g.dtype))}", f"beta {_SHORT.get(_dtype_name(beta.dtype))}"]
    if cu_seqlens is not None:
        parts.append(f"varlen N={cu_seqlens.shape[0] - 1}")
    if initial_state is not None:
        parts.append("h0")
    if output_final_state:
        parts.append("ht")
    if l2:
        parts.append("qk l2norm")
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad
                                       for t in (q, v, g, beta, initial_state)):
        parts.append("forward + backward")
    else:
        parts.append("forward")
    return ", ".join(parts)


def _make_backend_class(BaseBackend):
    class QLABackend(BaseBackend):
        """QLA's GDN kernels (python/qla/fla.py of QLA) for chunk_gated_delta_rule,
        forward and backward (QLA's op is an autograd Function). Registered by
        qla.fla.enable(); QLA_FLA_BACKEND=0 switches it off."""

        backend_type = BACKEND_TYPE
        package_name = None
        env_var = ENV_VAR
        default_enable = False
        priority = PRIORITY

        @classmethod
        def is_available(cls) -> bool:
            return _is_available()

        @classmethod
        def is_enabled(cls) -> bool:  # a classmethod: FLA 0.5 calls it on the class, FLA 0.6 on the instance
            return is_enabled()

        def chunk_gated_delta_rule_verifier(self, q, k, v, g, beta, scale=None, initial_state=None,
                                            output_final_state=False, use_qk_l2norm_in_kernel=False,
                                            use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                                            state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None,
                                            chunk_indices=None, cp_context=None, **kwargs):
            import torch

            env = Environment(capability=_capability(q), grad_enabled=torch.is_grad_enabled(),
                              has_backward=_has_backward,
                              capturing=isinstance(q, torch.Tensor) and q.is_cuda and
                              torch.cuda.is_current_stream_capturing())
            kw = {name: (_desc(x) if isinstance(x, torch.Tensor) else x) for name, x in kwargs.items()}
            ok, reason = check(env, _desc(q), _desc(k), _desc(v), _desc(g), _desc(beta), scale=scale,
                               initial_state=_desc(initial_state), output_final_state=output_final_state,
                               use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                               use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel,
                               allow_neg_eigval=allow_neg_eigval, state_v_first=state_v_first,
                               cu_seqlens=_desc(cu_seqlens), cu_seqlens_cpu=_desc(cu_seqlens_cpu),
                               chunk_indices=_desc(chunk_indices), cp_context=cp_context, **kw)
            if not ok:
                _counts["rejected"] += 1
                _counts["last_rejection"] = reason
                if _log.isEnabledFor(logging.DEBUG):
                    _log.debug("FLA chunk_gated_delta_rule -> FLA (QLA refused: %s)", reason)
            return ok, reason

        def chunk_gated_delta_rule(self, q, k, v, g, beta, scale=None, initial_state=None,
                                   output_final_state=False, use_qk_l2norm_in_kernel=False,
                                   use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False, state_v_first=False,
                                   cu_seqlens=None, cu_seqlens_cpu=None, chunk_indices=None, cp_context=None,
                                   **kwargs):
            # The verifier accepted: the options QLA lacks are off, and
            # cu_seqlens_cpu / chunk_indices / chunk_size=64 say nothing
            # QLA does not derive itself.
            from .gdn import chunk_gated_delta_rule as qla_op

            _counts["served"] += 1
            if _log.isEnabledFor(logging.INFO):
                _log.info("FLA chunk_gated_delta_rule -> QLA (%s)",
                          _summary(q, v, g, beta, initial_state, output_final_state, cu_seqlens,
                                   use_qk_l2norm_in_kernel))
            gate = bool(kwargs.get("use_gate_in_kernel", False))
            return qla_op(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                          output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                          use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                          use_beta_sigmoid_in_kernel=bool(use_beta_sigmoid_in_kernel),
                          allow_neg_eigval=bool(allow_neg_eigval), use_gate_in_kernel=gate,
                          A_log=kwargs.get("A_log") if gate else None,
                          dt_bias=kwargs.get("dt_bias") if gate else None, state_v_first=bool(state_v_first))

    return QLABackend


# FLA's dispatch module, newest layout first: FLA >= 0.6 has fla/backends.py,
# FLA 0.5 fla/ops/backends/__init__.py.
_DISPATCH_MODULES = ("fla.backends", "fla.ops.backends")
_GDN_OP_MODULE = "fla.ops.gated_delta_rule"
_GDN_BACKENDS_MODULE = "fla.ops.gated_delta_rule.backends"


def _absent(e: ImportError, name: str) -> bool:
    """Whether `e` says that module `name` (or a package above it) does not exist,
    rather than that importing it failed."""
    missing = getattr(e, "name", None)
    return isinstance(e, ModuleNotFoundError) and missing is not None and \
        (name == missing or name.startswith(missing + "."))


def _dispatch_module():
    """FLA's dispatch module: fla.backends (FLA >= 0.6) or fla.ops.backends (FLA 0.5)."""
    for name in _DISPATCH_MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError as e:
            if _absent(e, name):
                continue
            raise ImportError(f"qla.fla: importing FLA's backend dispatch {name} failed: "
                              f"{type(e).__name__}: {e}") from e
        missing = [n for n in ("BackendRegistry", "BaseBackend", "dispatch") if not hasattr(mod, n)]
        if missing:
            raise ImportError(f"qla.fla: this FLA's {name} has no {', '.join(missing)} (an FLA without the "
                              "backend dispatch qla.fla plugs into)")
        return mod
    raise ImportError(
        "qla.fla needs flash-linear-attention with its backend dispatch (the `fla` package: fla.backends in "
        "FLA >= 0.6, fla.ops.backends in FLA 0.5; BackendRegistry, BaseBackend, dispatch) and PyTorch: install "
        "them (pip install flash-linear-attention) or put an FLA checkout on PYTHONPATH; neither "
        f"{' nor '.join(_DISPATCH_MODULES)} could be found")


def _fla():
    """FLA's dispatch module and its gated_delta_rule registry (imports FLA),
    FLA's own GDN backends loaded into it first."""
    fla_backends = _dispatch_module()
    # The op itself: on FLA 0.6 its @dispatch('gated_delta_rule') creates the
    # registry and imports FLA's GDN backends into it; on FLA 0.5 it only binds
    # the name, and FLA imports the backends on the first call.
    try:
        importlib.import_module(_GDN_OP_MODULE)
    except ImportError as e:
        raise ImportError(f"qla.fla: importing FLA's {_GDN_OP_MODULE} failed: {type(e).__name__}: {e}") from e
    # FLA's own GDN backends (FlashQLA, ...) now, as FLA's dispatch would: on
    # FLA 0.5 that module creates gdr_registry, which replaces any registry of
    # the operation made before it.
    try:
        importlib.import_module(_GDN_BACKENDS_MODULE)
    except ImportError as e:
        if not _absent(e, _GDN_BACKENDS_MODULE):
            raise ImportError(f"qla.fla: importing FLA's GDN backends ({_GDN_BACKENDS_MODULE}) failed: "
                              f"{type(e).__name__}: {e}") from e
    get = getattr(fla_backends, "_get_operation_registry", None)
    registries = getattr(fla_backends, "_operation_registries", None)
    if callable(get):                                   # FLA >= 0.6
        registry = get(_OPERATION)
    elif isinstance(registries, dict):
        registry = registries.get(_OPERATION) or registries.setdefault(_OPERATION,
                                                                      fla_backends.BackendRegistry(_OPERATION))
    else:                                               # FLA 0.5: registries register themselves by name
        registries = getattr(fla_backends.BackendRegistry, "_registries", None)
        if not isinstance(registries, dict):
            raise ImportError(f"qla.fla: this FLA's {fla_backends.__name__} keeps no per-operation registry "
                              "qla.fla knows (fla.backends._get_operation_registry of FLA 0.6, "
                              "fla.ops.backends.BackendRegistry._registries of FLA 0.5)")
        registry = registries.get(_OPERATION) or fla_backends.BackendRegistry(_OPERATION)
    return fla_backends, registry


def enable(fused_recurrent: bool = False) -> None:
    """Registers QLA as the first backend of FLA's chunk_gated_delta_rule (idempotent).
    fused_recurrent=True also serves FLA's fused_recurrent_gated_delta_rule
    (decode, forward only) where :func:`check_fused_recurrent` accepts: FLA
    has no dispatch for it, so the function is replaced in FLA's loaded
    modules (off by default: not yet run on a GPU). Raises ImportError
    without FLA (or torch), RuntimeError when FLA's dispatch is bypassed
    (FLA_DISABLE_BACKEND_DISPATCH=1), qla.QlaError when libqla.so cannot be loaded."""
    global _enabled, _backend, _registry, _backend_cls
    fla_backends, registry = _fla()
    if getattr(fla_backends, "_DISPATCH_DISABLED", False):
        raise RuntimeError("qla.fla.enable(): FLA_DISABLE_BACKEND_DISPATCH=1 was set when FLA was imported, so "
                           "FLA calls its own kernels without consulting any backend; unset it to use QLA from FLA")
    from . import gdn
    gdn._lib()  # a clear QlaError now rather than a silent fallback later
    with _lock:
        if _backend_cls is None:
            _backend_cls = _make_backend_class(fla_backends.BaseBackend)
        if _backend is None:
            _backend = _backend_cls()
        _registry = registry
        _enabled = True  # before register(): FLA 0.5's register() caches can_use() per class
        registry.register(_backend)  # BackendRegistry.register (both releases): replaces by backend_type
    _log.info("FLA backend enabled: FLA's chunk_gated_delta_rule -> QLA where QLA's contract allows")
    if fused_recurrent:
        n = _patch_fused_recurrent()
        _log.info("FLA fused_recurrent_gated_delta_rule -> QLA where QLA's contract allows (%d module attributes)", n)


def disable() -> None:
    """Switches QLA off in FLA's dispatch and takes it out of FLA's registry (FLA's
    dispatch as before :func:`enable`). Does nothing if it was not enabled."""
    global _enabled
    _unpatch_fused_recurrent()
    with _lock:
        was = _enabled
        _enabled = False
        reg, be = _registry, _backend
        if reg is not None and be is not None:
            try:
                # FLA 0.5's registry has a lock and an "active" backend; FLA 0.6's neither.
                lock = getattr(reg, "_lock", None)
                with lock if lock is not None else contextlib.nullcontext():
                    if reg._backends.get(BACKEND_TYPE) is be:
                        del reg._backends[BACKEND_TYPE]
                    if getattr(reg, "_active", None) is be:
                        reg._active = None
                        update = getattr(reg, "_update_active_backend", None)
                        if update is not None:
                            update()
            except AttributeError:  # another FLA's registry internals: is_enabled() is False anyway
                pass
    if was:
        _log.info("FLA backend disabled: FLA's chunk_gated_delta_rule on FLA's own kernels")


# FLA's fused_recurrent_gated_delta_rule has no backend dispatch (FLA 0.6):
# enable(fused_recurrent=True) replaces the function object itself in every
# loaded fla.* module that holds it (fla.ops, fla.ops.gated_delta_rule, its
# fused_recurrent module, a layer module that imported it by name) with a
# wrapper that asks check_fused_recurrent and calls QLA or FLA's original;
# disable() puts the originals back. Modules imported later bind the wrapper
# through fla.ops.gated_delta_rule.
_FR_MODULE = "fla.ops.gated_delta_rule.fused_recurrent"
_FR_NAME = "fused_recurrent_gated_delta_rule"
_fr_patched: list = []   # (module, attribute, original)
_fr_counts = {"served": 0, "rejected": 0, "last_rejection": None}


def _make_fr_wrapper(original):
    import functools
    import inspect

    sig = inspect.signature(original)

    @functools.wraps(original)
    def fused_recurrent_gated_delta_rule(*args, **kwargs):
        if _fr_patched and not _env_off() and _is_available():
            import torch

            try:
                a = dict(sig.bind(*args, **kwargs).arguments)
            except TypeError:
                return original(*args, **kwargs)
            extra = a.pop("kwargs", {}) if "kwargs" in sig.parameters else {}
            q = a.get("q")
            env = Environment(capability=_capability(q), grad_enabled=torch.is_grad_enabled())
            descs = {n: (_desc(x) if isinstance(x, torch.Tensor) else x) for n, x in {**a, **extra}.items()}
            ok, reason = check_fused_recurrent(env, **descs)
            if ok:
                from .gdn import fused_recurrent_gated_delta_rule as qla_op

                _fr_counts["served"] += 1
                if _log.isEnabledFor(logging.INFO):
                    _log.info("FLA fused_recurrent_gated_delta_rule -> QLA (B=%d T=%d Hv=%d K=%d V=%d)",
                              *q.shape[:2], a["v"].shape[2], q.shape[3], a["v"].shape[3])
                for n in ("gk", "gv", "cu_seqlens"):
                    a.pop(n, None)
                return qla_op(**a)
            _fr_counts["rejected"] += 1
            _fr_counts["last_rejection"] = reason
            if _log.isEnabledFor(logging.DEBUG):
                _log.debug("FLA fused_recurrent_gated_delta_rule -> FLA (QLA refused: %s)", reason)
        return original(*args, **kwargs)

    fused_recurrent_gated_delta_rule.__qla_original__ = original
    return fused_recurrent_gated_delta_rule


def _patch_fused_recurrent() -> int:
    """Replaces FLA's fused_recurrent_gated_delta_rule in the loaded fla.*
    modules (importing its own module first); returns how many attributes."""
    import sys

    with _lock:
        if _fr_patched:
            return len(_fr_patched)
        mod = importlib.import_module(_FR_MODULE)
        original = getattr(mod, _FR_NAME, None)
        if not callable(original):
            raise ImportError(f"qla.fla: this FLA's {_FR_MODULE} has no {_FR_NAME}")
        original = getattr(original, "__qla_original__", original)
        wrapper = _make_fr_wrapper(original)
        for name, m in list(sys.modules.items()):
            if m is None or not (name == "fla" or name.startswith("fla.")):
                continue
            for attr, value in list(vars(m).items()):
                if value is original:
                    setattr(m, attr, wrapper)
                    _fr_patched.append((m, attr, original))
        return len(_fr_patched)


def _unpatch_fused_recurrent() -> None:
    with _lock:
        while _fr_patched:
            m, attr, original = _fr_patched.pop()
            if getattr(getattr(m, attr, None), "__qla_original__", None) is original:
                setattr(m, attr, original)


def fused_recurrent_counters() -> dict:
    """As :func:`counters`, for FLA's fused_recurrent_gated_delta_rule
    (enable(fused_recurrent=True))."""
    return dict(_fr_counts)


def _enable_from_environment() -> None:
    v = os.environ.get(ENV_VAR)
    if v is None or v.strip().lower() in _OFF:
        return
    try:
        enable()
    except ImportError as e:
        raise ImportError(f"{ENV_VAR}={v}: {e}") from e
    except RuntimeError as e:
        raise RuntimeError(f"{ENV_VAR}={v}: {e}") from e


_enable_from_environment()


def _backend_object() -> Any:
    """The registered backend (None before :func:`enable`), for tests."""
    return _backend


def _registry_object() -> Any:
    """FLA's gated_delta_rule registry :func:`enable` registered into (None before), for tests."""
    return _registry
