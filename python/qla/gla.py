"""Chunked gated linear attention with a per-head scalar decay (RetNet /
simple GLA) forward on PyTorch CUDA tensors, through libqla.so's C ABI
(kernels/gla/include/qla/gla_c.h; the kernel is kernels/gla/gla_fwd.qla,
built step by step in docs/tutorial.md).

    from qla import chunk_simple_gla
    o, ht = chunk_simple_gla(q, k, v, g, output_final_state=True)

Same arguments and results as FLA's ``fla.ops.simple_gla.chunk_simple_gla``
(forward only: the result is not differentiable). The call never
synchronizes with the host except to check ``cu_seqlens`` (a copy to the
host, skipped when ``cu_seqlens_cpu`` is given or while a CUDA graph is being
captured); it needs no workspace and may be captured in a CUDA graph once its
kernel is compiled and loaded (call it once, or :func:`warmup`, first).
Importing this module does not need torch; calling it does.
"""
from __future__ import annotations

import ctypes

from ._lib import QlaError, _load
from . import _ctensor
from ._ctensor import BF16, F16, F32, I32, I64  # noqa: F401 (dtype codes, part of the module's API)
from ._ctensor import Tensor as _Tensor, check as _check, tma_friendly as _tma_friendly, unit_last as _unit_last

__all__ = ["chunk_simple_gla", "warmup"]

_OP = "chunk_simple_gla: "
_ABI_VERSION = 1


class _Args(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("scale", ctypes.c_double),
        ("q", _Tensor),
        ("k", _Tensor),
        ("v", _Tensor),
        ("g", _Tensor),
        ("o", _Tensor),
        ("initial_state", _Tensor),
        ("final_state", _Tensor),
        ("cu_seqlens", _Tensor),
        ("cu_seqlens_host", ctypes.POINTER(ctypes.c_int64)),
        ("stream", ctypes.c_void_p),
    ]


class _Config(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int32) for n in ("dtype", "k", "v", "varlen", "cu_dtype", "initial_state",
                                              "final_state")]


assert ctypes.sizeof(_Tensor) == 88 and ctypes.sizeof(_Args) == 16 + 8 * 88 + 16 and ctypes.sizeof(_Config) == 28


def _dtype_code(name: str, dtype) -> int:
    return _ctensor.dtype_code(_OP, name, dtype, "the operator")


def _fill(ct, name: str, t) -> None:
    _ctensor.fill(_OP, ct, name, t, "the operator")


def _as_tensor(name: str, t, device):
    return _ctensor.as_tensor(_OP, name, t, device)


def _lib():
    lib = _load()
    if not getattr(lib, "_qla_gla_bound", False):
        if not hasattr(lib, "qla_gla_forward"):
            from . import library_path
            raise QlaError(f"{_OP}{library_path()} has no qla_gla_forward: it is older than this package "
                           f"(rebuild QLA)")
        c = ctypes
        lib.qla_gla_forward_args_init.restype = None
        lib.qla_gla_forward_args_init.argtypes = [c.POINTER(_Args)]
        lib.qla_gla_forward_validate.restype = c.c_int
        lib.qla_gla_forward_validate.argtypes = [c.POINTER(_Args), c.c_char_p, c.c_size_t]
        lib.qla_gla_forward.restype = c.c_int
        lib.qla_gla_forward.argtypes = [c.POINTER(_Args), c.c_char_p, c.c_size_t]
        lib.qla_gla_forward_warmup.restype = c.c_int
        lib.qla_gla_forward_warmup.argtypes = [c.POINTER(_Config), c.c_char_p, c.c_size_t]
        lib._qla_gla_bound = True
    return lib


def chunk_simple_gla(q, k, v, g=None, g_gamma=None, scale: float | None = None, initial_state=None,
                     output_final_state: bool = False, state_v_first: bool = False, cu_seqlens=None,
                     cu_seqlens_cpu=None, **kwargs):
    """Simple GLA over chunks of 64 tokens (FLA's function of this name, forward):
    S_t = exp(g_t) S_{t-1} + k_t v_t^T, o_t = scale * S_t^T q_t.

    q, k: [B, T, Hqk, K] bf16/f16; v: [B, T, H, V] (H % Hqk == 0; K, V in {64, 128});
    g: [B, T, H] log decay (f32; another float dtype is converted), or
    g_gamma: [H] a data-independent log decay per head (one of the two);
    scale: default K ** -0.5; initial_state: [N, H, K, V] f32;
    cu_seqlens: [N + 1] int32/int64 offsets of N packed sequences (B must be 1),
    cu_seqlens_cpu: its host copy (spares the device-to-host copy).
    state_v_first=True ([V, K] states) is not supported.

    Returns (o [B, T, H, V] in the input dtype, final_state [N, H, K, V] f32
    or None unless output_final_state). Raises QlaError on bad input.
    """
    import torch

    chunk_size = kwargs.pop("chunk_size", None)
    if kwargs:
        raise QlaError(f"{_OP}unexpected arguments {sorted(kwargs)}")
    if chunk_size not in (None, 64):
        raise QlaError(f"{_OP}chunk_size = {chunk_size}: only 64 is supported")
    if state_v_first:
        raise QlaError(f"{_OP}state_v_first=True ([V, K] states) is not supported")
    q = _as_tensor("q", q, None)
    dev = q.device
    k = _as_tensor("k", k, dev)
    v = _as_tensor("v", v, dev)
    if v.dim() != 4:
        raise QlaError(f"{_OP}v must have 4 dims [B, T, H, V], got shape {list(v.shape)}")
    if (g is None) == (g_gamma is None):
        raise QlaError(f"{_OP}give exactly one of g ([B, T, H]) and g_gamma ([H])")
    if g_gamma is not None:
        g_gamma = _as_tensor("g_gamma", g_gamma, dev)
        if g_gamma.dim() != 1 or g_gamma.shape[0] != v.shape[2]:
            raise QlaError(f"{_OP}g_gamma must have shape [H] = [{v.shape[2]}], got {list(g_gamma.shape)}")
        g = g_gamma.float().view(1, 1, -1).expand(v.shape[0], v.shape[1], -1).contiguous()
    g = _as_tensor("g", g, dev)
    if g.dtype != torch.float32 and g.is_floating_point():
        g = g.float()
    if initial_state is not None:
        initial_state = _as_tensor("initial_state", initial_state, dev)
    capturing = torch.cuda.is_current_stream_capturing()
    cu_host = None
    if cu_seqlens is not None:
        if not isinstance(cu_seqlens, torch.Tensor):
            raise QlaError(f"{_OP}cu_seqlens must be a torch.Tensor, got {type(cu_seqlens).__name__}")
        if cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
            raise QlaError(f"{_OP}cu_seqlens must have 1 dim [N + 1] with N + 1 >= 2 entries, "
                           f"got shape {list(cu_seqlens.shape)}")
        if cu_seqlens_cpu is not None:
            cu_host = cu_seqlens_cpu.to("cpu", torch.int64).contiguous()
        if not cu_seqlens.is_cuda:
            if capturing:
                raise QlaError(f"{_OP}cu_seqlens must be a CUDA tensor while a CUDA graph is being captured")
            if cu_host is None:
                cu_host = cu_seqlens.to(torch.int64).contiguous()
            cu_seqlens = cu_seqlens.to(dev)
        elif cu_seqlens.device != dev:
            raise QlaError(f"{_OP}cu_seqlens is on {cu_seqlens.device} but q is on {dev}")
        if not cu_seqlens.is_contiguous():
            cu_seqlens = cu_seqlens.contiguous()
        if cu_host is None and not capturing:
            cu_host = cu_seqlens.to("cpu", torch.int64).contiguous()  # synchronizes
    if not _tma_friendly(q):
        q = q.contiguous()
    if not _tma_friendly(k):
        k = k.contiguous()
    if not _tma_friendly(v):
        v = v.contiguous()
    if not _unit_last(g):
        g = g.contiguous()
    if initial_state is not None and not _unit_last(initial_state):
        initial_state = initial_state.contiguous()

    B, T = q.shape[0], q.shape[1]
    K = q.shape[-1]
    H, V = v.shape[2], v.shape[3]
    N = cu_seqlens.shape[0] - 1 if cu_seqlens is not None else B
    o = torch.empty((B, T, H, V), dtype=q.dtype, device=dev)
    final_state = torch.empty((N, H, K, V), dtype=torch.float32, device=dev) if output_final_state else None

    lib = _lib()
    a = _Args()
    lib.qla_gla_forward_args_init(ctypes.byref(a))
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("o", o)):
        _fill(getattr(a, name), name, t)
    if initial_state is not None:
        _fill(a.initial_state, "initial_state", initial_state)
    if final_state is not None:
        _fill(a.final_state, "final_state", final_state)
    if cu_seqlens is not None:
        _fill(a.cu_seqlens, "cu_seqlens", cu_seqlens)
    if cu_host is not None:
        a.cu_seqlens_host = ctypes.cast(ctypes.c_void_p(cu_host.data_ptr()), ctypes.POINTER(ctypes.c_int64))
    a.scale = float("nan") if scale is None else float(scale)
    err = ctypes.create_string_buffer(4096)
    with torch.cuda.device(dev):
        a.stream = torch.cuda.current_stream(dev).cuda_stream
        _check(lib.qla_gla_forward(ctypes.byref(a), err, len(err)), err)
    return o, final_state


def warmup(dtype=None, K: int = 128, V: int = 128, varlen: bool = False, cu_dtype=None,
           initial_state: bool = False, output_final_state: bool = False) -> None:
    """Compiles (and loads into the current CUDA context) the kernel one call
    configuration needs, so that a later call may be captured in a CUDA graph.
    Dtypes may be torch dtypes or names ("bf16", "i64"); by name it needs
    neither torch nor a GPU (compiling fills the kernel cache)."""
    c = _Config()
    c.dtype = _dtype_code("dtype", "bf16" if dtype is None else dtype)
    c.k, c.v = int(K), int(V)
    c.varlen = 1 if varlen else 0
    c.cu_dtype = _dtype_code("cu_dtype", "i32" if cu_dtype is None else cu_dtype)
    c.initial_state = 1 if initial_state else 0
    c.final_state = 1 if output_final_state else 0
    err = ctypes.create_string_buffer(65536)
    _check(_lib().qla_gla_forward_warmup(ctypes.byref(c), err, len(err)), err)
