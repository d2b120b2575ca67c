"""Gated Delta Network (GDN) chunked forward on PyTorch CUDA tensors, through
libqla.so's C ABI (kernels/gdn/include/qla/gdn_c.h).

    from qla import chunk_gated_delta_rule
    o, ht = chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)

Same arguments and results as FLA's ``chunk_gated_delta_rule``. The forward
never synchronizes with the host except to check ``cu_seqlens`` (a copy to
the host, once per tensor object and version, never made while a CUDA graph
is being captured: a copy made before is used then; the cost model also
plans for the lengths it gives), and it may be
captured in a CUDA graph once its kernels are compiled and loaded: call it
once, or :func:`warmup`, before capturing. It is differentiable under
torch.autograd: the backward (QLA's backward kernels, through the C ABI's
qla_gdn_backward) gives every input's gradient in its dtype and shape.
Importing this module does not need torch; calling it does.
"""
from __future__ import annotations

import ctypes
import math
import weakref

from ._lib import QlaError, _load, library_path
from . import _ctensor
from ._ctensor import BF16, F16, F32, I32, I64  # noqa: F401 (dtype codes, part of the module's API)
from ._ctensor import Tensor as _Tensor, check as _check, tma_friendly as _tma_friendly, unit_last as _unit_last

__all__ = ["chunk_gated_delta_rule", "warmup", "warmup_recurrent", "workspace_bytes"]

_OP = "chunk_gated_delta_rule: "
_ABI_VERSION = 11


class _Args(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_int32),
        ("use_qk_l2norm", ctypes.c_int32),
        ("scale", ctypes.c_double),
        ("q", _Tensor),
        ("k", _Tensor),
        ("v", _Tensor),
        ("g", _Tensor),
        ("beta", _Tensor),
        ("o", _Tensor),
        ("initial_state", _Tensor),
        ("final_state", _Tensor),
        ("cu_seqlens", _Tensor),
        ("cu_seqlens_host", ctypes.POINTER(ctypes.c_int64)),
        ("stream", ctypes.c_void_p),
        ("segment_chunks", ctypes.c_int64),
        ("checkpoints", _Tensor),
        ("beta_activation", ctypes.c_int32),
        ("use_gate", ctypes.c_int32),
        ("A_log", _Tensor),
        ("dt_bias", _Tensor),
        ("state_v_first", ctypes.c_int32),
        ("reserved7", ctypes.c_int32),
        ("state_pool", _Tensor),
        ("initial_slots", _Tensor),
        ("final_slots", _Tensor),
        ("state_pool_k_first", ctypes.c_int32),
        ("reserved9", ctypes.c_int32),
        ("checkpoint_every", ctypes.c_int64),
        ("checkpoint_slots", _Tensor),
        ("max_seqlen", ctypes.c_int64),
        ("initial_slots_host", ctypes.POINTER(ctypes.c_int32)),
        ("final_slots_host", ctypes.POINTER(ctypes.c_int32)),
        ("checkpoint_slots_host", ctypes.POINTER(ctypes.c_int32)),
    ]


class _Config(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int32) for n in ("dtype", "beta_dtype", "k", "v", "varlen", "cu_dtype",
                                              "use_qk_l2norm", "initial_state", "final_state", "g_dtype",
                                              "beta_activation", "gate", "state_v_first", "pool",
                                              "pool_k_first", "pool_checkpoints")]


class _RecConfig(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int32) for n in ("dtype", "g_dtype", "beta_dtype", "state_dtype", "k", "v",
                                              "use_qk_l2norm", "beta_activation", "gate", "pool_k_first")]


class _BwdArgs(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_int32),
        ("use_qk_l2norm", ctypes.c_int32),
        ("scale", ctypes.c_double),
        ("q", _Tensor),
        ("k", _Tensor),
        ("v", _Tensor),
        ("g", _Tensor),
        ("beta", _Tensor),
        ("initial_state", _Tensor),
        ("cu_seqlens", _Tensor),
        ("cu_seqlens_host", ctypes.POINTER(ctypes.c_int64)),
        ("stream", ctypes.c_void_p),
        ("segment_chunks", ctypes.c_int64),
        ("dout", _Tensor),
        ("dht", _Tensor),
        ("dq", _Tensor),
        ("dk", _Tensor),
        ("dv", _Tensor),
        ("dg", _Tensor),
        ("dbeta", _Tensor),
        ("dh0", _Tensor),
        ("checkpoints", _Tensor),
        ("beta_activation", ctypes.c_int32),
        ("use_gate", ctypes.c_int32),
        ("A_log", _Tensor),
        ("dt_bias", _Tensor),
        ("dA_log", _Tensor),
        ("ddt_bias", _Tensor),
        ("state_v_first", ctypes.c_int32),
        ("reserved7", ctypes.c_int32),
    ]


assert ctypes.sizeof(_Tensor) == 88 and ctypes.sizeof(_Args) == 1512 and ctypes.sizeof(_Config) == 64
assert ctypes.sizeof(_BwdArgs) == 16 + 20 * 88 + 40


class _RecArgs(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_int32),
        ("use_qk_l2norm", ctypes.c_int32),
        ("scale", ctypes.c_double),
        ("q", _Tensor),
        ("k", _Tensor),
        ("v", _Tensor),
        ("g", _Tensor),
        ("beta", _Tensor),
        ("A_log", _Tensor),
        ("dt_bias", _Tensor),
        ("state_pool", _Tensor),
        ("read_index", _Tensor),
        ("write_index", _Tensor),
        ("o", _Tensor),
        ("stream", ctypes.c_void_p),
        ("beta_activation", ctypes.c_int32),
        ("use_gate", ctypes.c_int32),
        ("state_pool_k_first", ctypes.c_int32),
        ("reserved9", ctypes.c_int32),
        ("read_index_host", ctypes.POINTER(ctypes.c_int32)),
        ("write_index_host", ctypes.POINTER(ctypes.c_int32)),
    ]


assert ctypes.sizeof(_RecArgs) == 16 + 11 * 88 + 40 and ctypes.sizeof(_RecConfig) == 40


def _dtype_code(name: str, dtype) -> int:
    return _ctensor.dtype_code(_OP, name, dtype, "the GDN operator")


def _fill(ct, name: str, t) -> None:
    _ctensor.fill(_OP, ct, name, t, "the GDN operator")


def _as_tensor(name: str, t, device):
    return _ctensor.as_tensor(_OP, name, t, device)


def _lib():
    lib = _load()
    if not getattr(lib, "_qla_gdn_bound", False):
        c = ctypes
        lib.qla_gdn_forward_args_init.restype = None
        lib.qla_gdn_forward_args_init.argtypes = [c.POINTER(_Args)]
        lib.qla_gdn_forward_workspace_bytes.restype = c.c_int
        lib.qla_gdn_forward_workspace_bytes.argtypes = [c.POINTER(_Args), c.POINTER(c.c_size_t), c.c_char_p,
                                                        c.c_size_t]
        lib.qla_gdn_forward.restype = c.c_int
        lib.qla_gdn_forward.argtypes = [c.POINTER(_Args), c.c_void_p, c.c_size_t, c.c_char_p, c.c_size_t]
        if hasattr(lib, "qla_gdn_forward_checkpoint_shape"):
            lib.qla_gdn_forward_checkpoint_shape.restype = c.c_int
            lib.qla_gdn_forward_checkpoint_shape.argtypes = [c.POINTER(_Args), c.POINTER(c.c_int64),
                                                             c.POINTER(c.c_int64), c.c_char_p, c.c_size_t]
        lib.qla_gdn_forward_warmup.restype = c.c_int
        lib.qla_gdn_forward_warmup.argtypes = [c.POINTER(_Config), c.c_char_p, c.c_size_t]
        if hasattr(lib, "qla_gdn_backward"):
            lib.qla_gdn_backward_args_init.restype = None
            lib.qla_gdn_backward_args_init.argtypes = [c.POINTER(_BwdArgs)]
            lib.qla_gdn_backward_workspace_bytes.restype = c.c_int
            lib.qla_gdn_backward_workspace_bytes.argtypes = [c.POINTER(_BwdArgs), c.POINTER(c.c_size_t), c.c_char_p,
                                                             c.c_size_t]
            lib.qla_gdn_backward.restype = c.c_int
            lib.qla_gdn_backward.argtypes = [c.POINTER(_BwdArgs), c.c_void_p, c.c_size_t, c.c_char_p, c.c_size_t]
            lib.qla_gdn_backward_warmup.restype = c.c_int
            lib.qla_gdn_backward_warmup.argtypes = [c.POINTER(_Config), c.c_int32, c.c_int32, c.c_char_p,
                                                    c.c_size_t]
        if hasattr(lib, "qla_gdn_recurrent"):
            lib.qla_gdn_recurrent_args_init.restype = None
            lib.qla_gdn_recurrent_args_init.argtypes = [c.POINTER(_RecArgs)]
            lib.qla_gdn_recurrent.restype = c.c_int
            lib.qla_gdn_recurrent.argtypes = [c.POINTER(_RecArgs), c.c_char_p, c.c_size_t]
        if hasattr(lib, "qla_gdn_recurrent_warmup"):
            lib.qla_gdn_recurrent_warmup.restype = c.c_int
            lib.qla_gdn_recurrent_warmup.argtypes = [c.POINTER(_RecConfig), c.c_char_p, c.c_size_t]
        lib._qla_gdn_bound = True
    return lib


# cu_seqlens' host copies, to validate and to plan from the sequences'
# lengths (the cost model's split and V slice): id(tensor) -> (weak reference,
# the tensor's version counter, the int64 host copy). A device tensor is
# copied (which waits for the device's queue) once per tensor object and
# version: the other layers of a model and the backward, given the same
# unmodified tensor, do not synchronize. An in-place change through torch
# bumps the version and is validated again; a write that bypasses torch's
# version counter is not seen (as in FLA's per-tensor cache).
_cu_host_cache = {}
_cu_host_copies = 0  # device-to-host copies made (tests)


def _cached_host_offsets(cu):
    hit = _cu_host_cache.get(id(cu))
    if hit is not None and hit[0]() is cu and hit[1] == cu._version:
        return hit[2]
    return None


def _host_offsets(cu):
    import torch

    global _cu_host_copies
    hit = _cached_host_offsets(cu)
    if hit is not None:
        return hit
    key = id(cu)
    host = cu.to("cpu", torch.int64).contiguous()  # synchronizes
    _cu_host_copies += 1

    def drop(ref, key=key):
        e = _cu_host_cache.get(key)
        if e is not None and e[0] is ref:
            del _cu_host_cache[key]

    _cu_host_cache[key] = (weakref.ref(cu, drop), cu._version, host)
    return host


def _inputs(q, k, v, g, beta, initial_state, cu_seqlens, host_copy: bool = True):
    """Checks what the C layer cannot (torch tensors on one CUDA device),
    copies views the kernels cannot read, and gives cu_seqlens on the device
    plus its host copy (None while a CUDA graph is being captured; with
    host_copy=False only one made before, never a new one: no device-to-host
    copy)."""
    import torch

    q = _as_tensor("q", q, None)
    dev = q.device
    k = _as_tensor("k", k, dev)
    v = _as_tensor("v", v, dev)
    g = _as_tensor("g", g, dev)
    beta = _as_tensor("beta", beta, dev)
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
        if not cu_seqlens.is_cuda:
            if capturing:
                raise QlaError(f"{_OP}cu_seqlens must be a CUDA tensor while a CUDA graph is being captured")
            cu_host = cu_seqlens.to(torch.int64).contiguous()
            cu_seqlens = cu_seqlens.to(dev)
        elif cu_seqlens.device != dev:
            raise QlaError(f"{_OP}cu_seqlens is on {cu_seqlens.device} but q is on {dev}")
        if not cu_seqlens.is_contiguous():
            cu_seqlens = cu_seqlens.contiguous()
        if cu_host is None:
            # While a graph is being captured only a copy made earlier is
            # used (no copy can be made then): the plan then matches the
            # eager calls' (below).
            cu_host = _cached_host_offsets(cu_seqlens) if capturing or not host_copy else _host_offsets(cu_seqlens)
    for name, t in (("q", q), ("v", v)):
        if t.dim() != 4:
            hv = "Hqk, K" if name == "q" else "Hv, V"
            raise QlaError(f"{_OP}{name} must have 4 dims [B, T, {hv}], got shape {list(t.shape)}")

    # Views the kernels cannot take as they are are copied (as FLA does).
    if not _tma_friendly(q):
        q = q.contiguous()
    if not _tma_friendly(k):
        k = k.contiguous()
    if not _tma_friendly(v):
        v = v.contiguous()
    if not _unit_last(g):
        g = g.contiguous()
    if not _unit_last(beta):
        beta = beta.contiguous()
    if initial_state is not None and not _tma_friendly(initial_state):
        initial_state = initial_state.contiguous()

    return q, k, v, g, beta, initial_state, cu_seqlens, cu_host


def _new_args(lib, cls, init):
    a = cls()
    init(ctypes.byref(a))
    if a.abi_version != _ABI_VERSION:
        raise QlaError(f"{_OP}{library_path()} has GDN ABI version {a.abi_version}; this package needs "
                       f"{_ABI_VERSION} (rebuild QLA, or use the package that came with the library)")
    return a


def _forward(q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens, use_qk_l2norm,
             segment_chunks=0, keep_checkpoints=False, beta_activation=0, gate=None, state_v_first=False):
    """o, final_state (or None), and with keep_checkpoints (training mode)
    the forward's checkpoints and their segment length (None, 0 where the
    forward does not split its sequences: the backward needs nothing else)."""
    import torch

    q, k, v, g, beta, initial_state, cu_seqlens, cu_host = _inputs(q, k, v, g, beta, initial_state, cu_seqlens)
    dev = q.device
    B, T, _, K = q.shape
    Hv, V = v.shape[2], v.shape[3]
    N = cu_seqlens.shape[0] - 1 if cu_seqlens is not None else B
    o = torch.empty((B, T, Hv, V), dtype=q.dtype, device=dev)
    final_state = (torch.empty((N, Hv, V, K) if state_v_first else (N, Hv, K, V), dtype=torch.float32, device=dev)
                   if output_final_state else None)

    lib = _lib()
    a = _new_args(lib, _Args, lib.qla_gdn_forward_args_init)
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("o", o)):
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
    a.use_qk_l2norm = 1 if use_qk_l2norm else 0
    a.segment_chunks = int(segment_chunks)
    a.beta_activation = int(beta_activation)
    _fill_gate(a, gate)
    a.state_v_first = 1 if state_v_first else 0

    err = ctypes.create_string_buffer(4096)
    checkpoints, seg = None, 0
    if keep_checkpoints:
        shape = (ctypes.c_int64 * 4)()
        seg_c = ctypes.c_int64(0)
        _check(lib.qla_gdn_forward_checkpoint_shape(ctypes.byref(a), shape, ctypes.byref(seg_c), err, len(err)), err)
        if shape[0] > 0:
            checkpoints = torch.empty(tuple(shape), dtype=torch.float32, device=dev)
            seg = seg_c.value
            _fill(a.checkpoints, "checkpoints", checkpoints)
    nbytes = ctypes.c_size_t(0)
    _check(lib.qla_gdn_forward_workspace_bytes(ctypes.byref(a), ctypes.byref(nbytes), err, len(err)), err)
    with torch.cuda.device(dev):
        workspace = torch.empty(nbytes.value, dtype=torch.uint8, device=dev)
        a.stream = torch.cuda.current_stream(dev).cuda_stream
        _check(lib.qla_gdn_forward(ctypes.byref(a), ctypes.c_void_p(workspace.data_ptr()), nbytes.value, err,
                                   len(err)), err)
    if keep_checkpoints:
        return o, final_state, checkpoints, seg
    return o, final_state


def _backward(q, k, v, g, beta, scale, initial_state, cu_seqlens, use_qk_l2norm, segment_chunks, do, dht,
              checkpoints=None, beta_activation=0, gate=None, state_v_first=False):
    """The gradients (dq, dk, dv, dg, dbeta, dh0 or None) of L = <do, o> +
    <dht, final_state> through qla_gdn_backward. checkpoints: the forward's
    (then segment_chunks is the forward's segment length)."""
    import torch

    q, k, v, g, beta, initial_state, cu_seqlens, cu_host = _inputs(q, k, v, g, beta, initial_state, cu_seqlens)
    dev = q.device
    lib = _lib()
    if not hasattr(lib, "qla_gdn_backward"):
        raise QlaError(f"{_OP}{library_path()} has no backward: it is older than this package (rebuild QLA)")
    if do is None:
        do = torch.zeros(v.shape, dtype=q.dtype, device=dev)
    do = _as_tensor("do", do, dev)
    if do.dtype != q.dtype:
        do = do.to(q.dtype)
    if not _tma_friendly(do):
        do = do.contiguous()
    if dht is not None:
        dht = _as_tensor("dht", dht, dev)
        if dht.dtype != torch.float32:
            dht = dht.float()
        if not _tma_friendly(dht):
            dht = dht.contiguous()
    dq = torch.empty(q.shape, dtype=q.dtype, device=dev)
    dk = torch.empty(k.shape, dtype=k.dtype, device=dev)
    dv = torch.empty(v.shape, dtype=v.dtype, device=dev)
    dg = torch.empty(g.shape, dtype=g.dtype, device=dev)
    dbeta = torch.empty(beta.shape, dtype=beta.dtype, device=dev)
    dh0 = torch.empty(initial_state.shape, dtype=torch.float32, device=dev) if initial_state is not None else None

    a = _new_args(lib, _BwdArgs, lib.qla_gdn_backward_args_init)
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("dout", do), ("dq", dq), ("dk", dk),
                    ("dv", dv), ("dg", dg), ("dbeta", dbeta)):
        _fill(getattr(a, name), "do" if name == "dout" else name, t)
    if initial_state is not None:
        _fill(a.initial_state, "initial_state", initial_state)
        _fill(a.dh0, "dh0", dh0)
    if dht is not None:
        _fill(a.dht, "dht", dht)
    if checkpoints is not None:
        _fill(a.checkpoints, "checkpoints", checkpoints)
    if cu_seqlens is not None:
        _fill(a.cu_seqlens, "cu_seqlens", cu_seqlens)
    if cu_host is not None:
        a.cu_seqlens_host = ctypes.cast(ctypes.c_void_p(cu_host.data_ptr()), ctypes.POINTER(ctypes.c_int64))
    a.scale = float("nan") if scale is None else float(scale)
    a.use_qk_l2norm = 1 if use_qk_l2norm else 0
    a.segment_chunks = int(segment_chunks)
    a.beta_activation = int(beta_activation)
    _fill_gate(a, gate)
    a.state_v_first = 1 if state_v_first else 0
    dA_log = ddt_bias = None
    if gate is not None:
        dA_log = torch.empty(gate[0].shape, dtype=torch.float32, device=dev)
        _fill(a.dA_log, "dA_log", dA_log)
        if gate[1] is not None:
            ddt_bias = torch.empty(gate[1].shape, dtype=torch.float32, device=dev)
            _fill(a.ddt_bias, "ddt_bias", ddt_bias)
    err = ctypes.create_string_buffer(4096)
    nbytes = ctypes.c_size_t(0)
    _check(lib.qla_gdn_backward_workspace_bytes(ctypes.byref(a), ctypes.byref(nbytes), err, len(err)), err)
    with torch.cuda.device(dev):
        workspace = torch.empty(nbytes.value, dtype=torch.uint8, device=dev)
        a.stream = torch.cuda.current_stream(dev).cuda_stream
        _check(lib.qla_gdn_backward(ctypes.byref(a), ctypes.c_void_p(workspace.data_ptr()), nbytes.value, err,
                                    len(err)), err)
    return dq, dk, dv, dg, dbeta, dh0, dA_log, ddt_bias


def _fill_gate(a, gate):
    """The in-kernel gate's fields of an argument struct: gate is None or
    (A_log, dt_bias or None), f32 tensors on q's device."""
    if gate is None:
        return
    a.use_gate = 1
    _fill(a.A_log, "A_log", gate[0])
    if gate[1] is not None:
        _fill(a.dt_bias, "dt_bias", gate[1])


_function = None


def _autograd_function():
    global _function
    if _function is None:
        import torch

        class ChunkGatedDeltaRuleFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens,
                        use_qk_l2norm, segment_chunks, training, beta_activation, use_gate, A_log, dt_bias,
                        state_v_first):
                gate = (A_log, dt_bias) if use_gate else None
                ckpt, seg = None, segment_chunks
                if training:
                    # Training mode: the forward keeps its segment start
                    # states (where it splits), the backward recomputes the
                    # rest from the inputs.
                    o, final_state, ckpt, fseg = _forward(q, k, v, g, beta, scale, initial_state,
                                                          output_final_state, cu_seqlens, use_qk_l2norm,
                                                          segment_chunks, keep_checkpoints=True,
                                                          beta_activation=beta_activation, gate=gate,
                                                          state_v_first=state_v_first)
                    if ckpt is not None:
                        seg = fseg
                else:
                    o, final_state = _forward(q, k, v, g, beta, scale, initial_state, output_final_state,
                                              cu_seqlens, use_qk_l2norm, segment_chunks,
                                              beta_activation=beta_activation, gate=gate,
                                              state_v_first=state_v_first)
                ctx.save_for_backward(q, k, v, g, beta, initial_state, cu_seqlens, ckpt, A_log, dt_bias)
                ctx.scale, ctx.l2, ctx.seg, ctx.bact, ctx.gate = scale, use_qk_l2norm, seg, beta_activation, use_gate
                ctx.vfirst = state_v_first
                return o, final_state

            @staticmethod
            def backward(ctx, do, dht):
                q, k, v, g, beta, initial_state, cu_seqlens, ckpt, A_log, dt_bias = ctx.saved_tensors
                gate = (A_log, dt_bias) if ctx.gate else None
                dq, dk, dv, dg, dbeta, dh0, dA_log, ddt_bias = _backward(
                    q, k, v, g, beta, ctx.scale, initial_state, cu_seqlens, ctx.l2, ctx.seg, do, dht,
                    checkpoints=ckpt, beta_activation=ctx.bact, gate=gate, state_v_first=ctx.vfirst)
                return (dq, dk, dv, dg, dbeta, None, dh0, None, None, None, None, None, None, None, dA_log,
                        ddt_bias, None)

        _function = ChunkGatedDeltaRuleFunction
    return _function


def chunk_gated_delta_rule(q, k, v, g, beta, scale: float | None = None, initial_state=None,
                           output_final_state: bool = False, cu_seqlens=None,
                           use_qk_l2norm_in_kernel: bool = False, segment_chunks: int = 0,
                           use_beta_sigmoid_in_kernel: bool = False, allow_neg_eigval: bool = False,
                           use_gate_in_kernel: bool = False, A_log=None, dt_bias=None,
                           state_v_first: bool = False):
    """The gated delta rule over chunks of 64 tokens (FLA's function of this name).

    q, k: [B, T, Hqk, K] bf16/f16; v: [B, T, Hv, V] (Hv % Hqk == 0; K, V in {64, 128, 256});
    g: [B, T, Hv] log decay, f32 or the input dtype; beta: [B, T, Hv] f32 or the input dtype;
    scale: default K ** -0.5; initial_state: [N, Hv, K, V] f32;
    cu_seqlens: [N + 1] int32/int64 offsets of N packed sequences (B must be 1);
    use_qk_l2norm_in_kernel: L2-normalize q and k per head first;
    use_beta_sigmoid_in_kernel: beta holds logits b and the kernels take
    sigmoid(b) (2 sigmoid(b) with allow_neg_eigval, which, as in FLA, has no
    effect without it); the gradient returned for beta is then dL/db;
    use_gate_in_kernel: g holds the raw gate input and the kernels take the
    log decay -exp(A_log) * softplus(g + dt_bias) (FLA's in-kernel gate;
    softplus(u) = u above 20); A_log [Hv] is required with it, dt_bias [Hv]
    optional, both taken in f32 (a cast is part of the graph), and the
    backward gives their gradients and g's (the raw input's);
    state_v_first: initial_state and final_state are [N, Hv, V, K] (FLA's
    V-first layout; QLA transposes them around its kernels);
    segment_chunks (not in FLA's signature): context parallelism, 0 lets the
    cost model decide, -1 never splits, n > 0 cuts long sequences into
    segments of n chunks of 64 tokens (the result is the same either way, to
    rounding).

    Returns (o [B, T, Hv, V] in the input dtype, final_state [N, Hv, K, V] f32
    or None unless output_final_state). Raises QlaError on bad input.
    Differentiable: backward gives dq, dk, dv, dg, dbeta (each in its
    input's dtype) and the initial state's gradient. When a gradient will be
    taken (grad mode on and an input requiring grad) the forward keeps the
    states at the starts of its segments, where it splits its sequences, for
    the backward (a few MB); otherwise it keeps nothing.
    """
    import torch

    if use_gate_in_kernel:
        if A_log is None:
            raise QlaError(f"{_OP}use_gate_in_kernel=True needs A_log ([Hv]: the log decay is "
                           "-exp(A_log) * softplus(g + dt_bias))")
        A_log = _as_tensor("A_log", A_log, q.device if isinstance(q, torch.Tensor) else None).float().contiguous()
        if dt_bias is not None:
            dt_bias = _as_tensor("dt_bias", dt_bias, A_log.device).float().contiguous()
    elif A_log is not None or dt_bias is not None:
        raise QlaError(f"{_OP}A_log and dt_bias are the in-kernel gate's parameters: they need "
                       "use_gate_in_kernel=True")
    training = torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in (q, k, v, g, beta, initial_state, A_log, dt_bias))
    beta_activation = (2 if allow_neg_eigval else 1) if use_beta_sigmoid_in_kernel else 0
    return _autograd_function().apply(q, k, v, g, beta, scale, initial_state, bool(output_final_state), cu_seqlens,
                                      bool(use_qk_l2norm_in_kernel), int(segment_chunks), training,
                                      beta_activation, bool(use_gate_in_kernel), A_log, dt_bias,
                                      bool(state_v_first))


def prefill(q, k, v, g, beta, state_pool, initial_slots=None, final_slots=None, scale: float | None = None,
            cu_seqlens=None, use_qk_l2norm_in_kernel: bool = False, use_beta_sigmoid_in_kernel: bool = False,
            allow_neg_eigval: bool = False, use_gate_in_kernel: bool = False, A_log=None, dt_bias=None,
            state_pool_k_first: bool = False, checkpoint_every: int = 0, checkpoint_slots=None,
            segment_chunks: int = 0, cu_seqlens_cpu=None, max_seqlen: int | None = None, out=None,
            check_slots: bool = False):
    """Prefill into a state pool (forward only; docs/gdn.md, "Serving"):
    chunk_gated_delta_rule's inputs, with the initial states read from and
    the final states written to the serving stacks' pool [slots, Hv, V, K]
    (V-first, f32 or bf16; with state_pool_k_first [slots, Hv, K, V]) by the
    fused kernel itself: sequence n starts from slot initial_slots[n] ([N]
    int32; < 0 or None: a zero state) and its final state goes to slot
    final_slots[n] ([N] int32; < 0 or None: not stored). Prefix caching:
    with checkpoint_every (a multiple of 64 tokens) the state after every
    checkpoint_every tokens of sequence n goes to slot checkpoint_slots[n, m]
    for the m-th ([N, M] int32; < 0 or m >= M: not stored). segment_chunks:
    context parallelism (0: the cost model, -1: never, n > 0: segments of n
    chunks). Returns o. With cu_seqlens on the GPU nothing is copied to the
    host: the plan is for the worst case of the total length, or for the
    lengths of cu_seqlens_cpu (FLA's and vLLM's host copy of the same
    offsets, a CPU tensor) when given, or for sequences of at most
    max_seqlen tokens (vLLM's max_query_len: a bound the plan may assume;
    one that a sequence exceeds costs speed, not correctness; with
    cu_seqlens_cpu it is checked). out: an optional [B, T, Hv, V] tensor of
    q's dtype that o is written into (vLLM's core_attn_out), returned.
    check_slots=True copies the slot arrays to the host (a synchronization:
    not for the serving loop's hot path or a CUDA graph) and raises QlaError,
    before anything runs, on a slot past the pool, a slot two sequences
    write, or one that a sequence reads and another writes. Without it the
    kernels still touch nothing outside the pool: a slot past it reads a
    zero state and stores nothing, as a negative one."""
    import torch

    q, k, v, g, beta, _, cu_seqlens, cu_host = _inputs(q, k, v, g, beta, None, cu_seqlens, host_copy=False)
    if cu_seqlens_cpu is not None:
        if cu_seqlens is None:
            raise QlaError(f"{_OP}cu_seqlens_cpu is the host copy of cu_seqlens, which is not given")
        if not isinstance(cu_seqlens_cpu, torch.Tensor) or cu_seqlens_cpu.is_cuda or \
                cu_seqlens_cpu.shape != cu_seqlens.shape:
            raise QlaError(f"{_OP}cu_seqlens_cpu must be a CPU tensor of cu_seqlens' shape {list(cu_seqlens.shape)}")
        cu_host = cu_seqlens_cpu.to(torch.int64).contiguous()
    dev = q.device
    B, T = q.shape[0], q.shape[1]
    Hv, V = v.shape[2], v.shape[3]
    o = torch.empty((B, T, Hv, V), dtype=q.dtype, device=dev) if out is None else _as_tensor("out", out, dev)
    if out is not None and not o.is_contiguous():
        raise QlaError(f"{_OP}out must be contiguous (o is written into it)")
    lib = _lib()
    a = _new_args(lib, _Args, lib.qla_gdn_forward_args_init)
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("o", o)):
        _fill(getattr(a, name), name, t)
    state_pool = _as_tensor("state_pool", state_pool, dev)
    if not state_pool.is_contiguous():
        raise QlaError(f"{_OP}state_pool must be contiguous (it is written in place)")
    _fill(a.state_pool, "state_pool", state_pool)
    keep = []  # the int32 copies and their host copies, alive until the call returns
    for name, t in (("initial_slots", initial_slots), ("final_slots", final_slots),
                    ("checkpoint_slots", checkpoint_slots)):
        if t is not None:
            t = _as_tensor(name, t, dev)
            if t.dtype != torch.int32:
                t = t.to(torch.int32)
            t = t.contiguous()
            keep.append(t)
            _fill(getattr(a, name), name, t)
            if check_slots:
                host = t.cpu()
                keep.append(host)
                setattr(a, name + "_host", ctypes.cast(ctypes.c_void_p(host.data_ptr()), ctypes.POINTER(ctypes.c_int32)))
    a.state_pool_k_first = 1 if state_pool_k_first else 0
    a.checkpoint_every = int(checkpoint_every)
    a.segment_chunks = int(segment_chunks)
    if max_seqlen is not None:
        a.max_seqlen = int(max_seqlen)  # validated by the library (needs cu_seqlens; checked against cu_seqlens_cpu)
    if cu_seqlens is not None:
        _fill(a.cu_seqlens, "cu_seqlens", cu_seqlens)
    if cu_host is not None:
        a.cu_seqlens_host = ctypes.cast(ctypes.c_void_p(cu_host.data_ptr()), ctypes.POINTER(ctypes.c_int64))
    a.scale = float("nan") if scale is None else float(scale)
    a.use_qk_l2norm = 1 if use_qk_l2norm_in_kernel else 0
    a.beta_activation = (2 if allow_neg_eigval else 1) if use_beta_sigmoid_in_kernel else 0
    if use_gate_in_kernel:
        if A_log is None:
            raise QlaError(f"{_OP}use_gate_in_kernel=True needs A_log ([Hv])")
        _fill_gate(a, (_as_tensor("A_log", A_log, dev).float().contiguous(),
                       None if dt_bias is None else _as_tensor("dt_bias", dt_bias, dev).float().contiguous()))
    err = ctypes.create_string_buffer(4096)
    nbytes = ctypes.c_size_t(0)
    _check(lib.qla_gdn_forward_workspace_bytes(ctypes.byref(a), ctypes.byref(nbytes), err, len(err)), err)
    with torch.cuda.device(dev):
        workspace = torch.empty(nbytes.value, dtype=torch.uint8, device=dev)
        a.stream = torch.cuda.current_stream(dev).cuda_stream
        _check(lib.qla_gdn_forward(ctypes.byref(a), ctypes.c_void_p(workspace.data_ptr()), nbytes.value, err,
                                   len(err)), err)
    return o


_ROP = "fused_recurrent_gated_delta_rule: "


def recurrent(q, k, v, g, beta, state_pool, read_index, write_index, scale: float | None = None,
              use_qk_l2norm_in_kernel: bool = True, use_beta_sigmoid_in_kernel: bool = False,
              allow_neg_eigval: bool = False, use_gate_in_kernel: bool = False, A_log=None, dt_bias=None, out=None,
              state_pool_k_first: bool = False, check_slots: bool = False):
    """Decode and speculative verify over a state pool (the serving stacks'
    layout; kernels/gdn/gdn_recurrent.qla): T tokens of each of N sequences.

    q, k: [N, T, Hqk, K]; v: [N, T, Hv, V] (bf16/f16; K, V in {64, 128, 256});
    g: [N, T, Hv] log decay, or with use_gate_in_kernel the raw input a
    (log decay -exp(A_log) * softplus(a + dt_bias), A_log and dt_bias [Hv]);
    beta: [N, T, Hv], or logits with use_beta_sigmoid_in_kernel (sigmoid,
    2 sigmoid with allow_neg_eigval); state_pool: [slots, Hv, V, K] f32 or
    bf16 (V-first; [slots, Hv, K, V] with state_pool_k_first), read and
    written in place; read_index: [N] int32, the
    slot sequence n starts from (< 0: a zero state); write_index: [N, T]
    int32, the slot the state after token t goes to (< 0: not stored; decode
    is T = 1 with write_index = read_index[:, None]); out: an optional [N, T,
    Hv, V] output tensor. Returns o. No host synchronization, no allocation
    beyond o: capturable in a CUDA graph after one call. Forward only.
    check_slots=True copies read_index and write_index to the host (a
    synchronization) and raises QlaError, before the launch, on a slot past
    the pool, a slot two sequences write, or one that a sequence reads and
    another writes; without it a slot past the pool reads a zero state and
    stores nothing."""
    import torch

    q = _as_tensor("q", q, None)
    dev = q.device
    t = {name: _as_tensor(name, x, dev) for name, x in (("k", k), ("v", v), ("g", g), ("beta", beta),
                                                         ("state_pool", state_pool), ("read_index", read_index),
                                                         ("write_index", write_index))}
    for name in ("q", "k", "v", "g", "beta"):
        x = q if name == "q" else t[name]
        if not x.is_contiguous():
            x = x.contiguous()
        if name == "q":
            q = x
        else:
            t[name] = x
    for name in ("state_pool", "read_index", "write_index"):
        if not t[name].is_contiguous():
            raise QlaError(f"{_ROP}{name} must be contiguous (it is indexed in place)")
    N, T = q.shape[0], q.shape[1]
    Hv, V = t["v"].shape[2], t["v"].shape[3]
    o = torch.empty((N, T, Hv, V), dtype=q.dtype, device=dev) if out is None else _as_tensor("out", out, dev)
    lib = _lib()
    if not hasattr(lib, "qla_gdn_recurrent"):
        raise QlaError(f"{_ROP}{library_path()} has no qla_gdn_recurrent: it is older than this package")
    a = _RecArgs()
    lib.qla_gdn_recurrent_args_init(ctypes.byref(a))
    _fill(a.q, "q", q)
    for name in ("k", "v", "g", "beta", "state_pool", "read_index", "write_index"):
        _fill(getattr(a, name), name, t[name])
    hosts = []
    if check_slots:
        for name in ("read_index", "write_index"):
            if t[name].dtype != torch.int32:
                raise QlaError(f"{_ROP}{name} has dtype {t[name].dtype}; expected int32")
            hosts.append(t[name].cpu())
            setattr(a, name + "_host", ctypes.cast(ctypes.c_void_p(hosts[-1].data_ptr()), ctypes.POINTER(ctypes.c_int32)))
    _fill(a.o, "o", o)
    if use_gate_in_kernel:
        if A_log is None:
            raise QlaError(f"{_ROP}use_gate_in_kernel=True needs A_log ([Hv])")
        A_log = _as_tensor("A_log", A_log, dev).float().contiguous()
        _fill(a.A_log, "A_log", A_log)
        if dt_bias is not None:
            dt_bias = _as_tensor("dt_bias", dt_bias, dev).float().contiguous()
            _fill(a.dt_bias, "dt_bias", dt_bias)
        a.use_gate = 1
    a.use_qk_l2norm = 1 if use_qk_l2norm_in_kernel else 0
    a.beta_activation = (2 if allow_neg_eigval else 1) if use_beta_sigmoid_in_kernel else 0
    a.state_pool_k_first = 1 if state_pool_k_first else 0
    a.scale = float("nan") if scale is None else float(scale)
    err = ctypes.create_string_buffer(4096)
    with torch.cuda.device(dev):
        a.stream = torch.cuda.current_stream(dev).cuda_stream
        _check(lib.qla_gdn_recurrent(ctypes.byref(a), err, len(err)), err)
    return o


def fused_recurrent_gated_delta_rule(q, k, v, g=None, beta=None, scale: float | None = None, initial_state=None,
                                     output_final_state: bool = False, use_qk_l2norm_in_kernel: bool = False,
                                     use_gate_in_kernel: bool = False, A_log=None, dt_bias=None,
                                     use_beta_sigmoid_in_kernel: bool = False, allow_neg_eigval: bool = False,
                                     state_v_first: bool = False, cu_seqlens=None, **kwargs):
    """FLA's fused_recurrent_gated_delta_rule (forward only, as FLA's) over
    :func:`recurrent`: B sequences of T tokens, q, k [B, T, Hqk, K], v [B, T,
    Hv, V], g and beta [B, T, Hv] (g None: no decay; beta None: 1), the
    initial state [B, Hv, K, V] ([B, Hv, V, K] with state_v_first) or None.
    Returns (o, final_state or None). Not taken (QlaError): cu_seqlens, gk,
    gv."""
    import torch

    if cu_seqlens is not None:
        raise QlaError(f"{_ROP}cu_seqlens is not taken (give B sequences of T tokens, or use recurrent() with "
                       "its slots)")
    for name in ("gk", "gv"):
        if kwargs.pop(name, None) is not None:
            raise QlaError(f"{_ROP}{name} (per-channel decays) is not taken")
    if kwargs:
        raise QlaError(f"{_ROP}unknown keyword(s) {sorted(kwargs)}")
    q = _as_tensor("q", q, None)
    dev = q.device
    B, T, _, K = q.shape
    Hv, V = v.shape[2], v.shape[3]
    if g is None:
        g = torch.zeros((B, T, Hv), dtype=torch.float32, device=dev)
    if beta is None:
        beta = torch.ones((B, T, Hv), dtype=torch.float32, device=dev)
    if initial_state is not None:
        h0 = _as_tensor("initial_state", initial_state, dev).float()
        pool = (h0 if state_v_first else h0.transpose(-1, -2)).contiguous().clone()
        read = torch.arange(B, dtype=torch.int32, device=dev)
    else:
        pool = torch.zeros((B, Hv, V, K), dtype=torch.float32, device=dev)
        read = torch.full((B,), -1, dtype=torch.int32, device=dev)
    write = torch.full((B, T), -1, dtype=torch.int32, device=dev)
    if output_final_state:
        write[:, T - 1] = torch.arange(B, dtype=torch.int32, device=dev)
    o = recurrent(q, k, v, g, beta, pool, read, write, scale=scale, use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                  use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel, allow_neg_eigval=allow_neg_eigval,
                  use_gate_in_kernel=use_gate_in_kernel, A_log=A_log, dt_bias=dt_bias)
    if not output_final_state:
        return o, None
    return o, (pool if state_v_first else pool.transpose(-1, -2).contiguous())


def warmup(dtype=None, K: int = 128, V: int = 128, beta_dtype=None, varlen: bool = False, cu_dtype=None,
           use_qk_l2norm: bool = False, initial_state: bool = False, output_final_state: bool = False,
           g_dtype=None, backward: bool = False, dht: bool = False, use_beta_sigmoid_in_kernel: bool = False,
           allow_neg_eigval: bool = False, use_gate_in_kernel: bool = False, dt_bias: bool = True,
           state_v_first: bool = False, pool=None, pool_k_first: bool = False,
           pool_checkpoints: bool = False) -> None:
    """Compiles (and loads into the current CUDA context) the kernels one call
    configuration needs, so that a later call may be captured in a CUDA graph.
    dtype: torch.bfloat16 (default) or torch.float16; beta_dtype and g_dtype:
    torch.float32 (default) or dtype; cu_dtype: torch.int32 (default) or
    torch.int64. backward: also the backward's kernels (dht: a final-state
    gradient will be given; initial_state: the initial state's gradient is
    computed). Dtypes may also be given by name ("bf16", "f32", ...), which
    needs no torch: compiling needs no GPU either, so a kernel cache
    ($QLA_CACHE_DIR) can be filled ahead on another machine (`python -m qla
    warmup` does it for the calls of serving and training stacks). pool:
    None, or the dtype of a state pool (f32 or bf16) for :func:`prefill`,
    K-first with pool_k_first, with checkpoint_every > 0 (pool_checkpoints)."""
    dtype = "bf16" if dtype is None else dtype
    c = _Config()
    c.dtype = _dtype_code("dtype", dtype)
    c.beta_dtype = _dtype_code("beta_dtype", "f32" if beta_dtype is None else beta_dtype)
    c.k, c.v = int(K), int(V)
    c.varlen = 1 if varlen else 0
    c.cu_dtype = _dtype_code("cu_dtype", "i32" if cu_dtype is None else cu_dtype)
    c.use_qk_l2norm = 1 if use_qk_l2norm else 0
    c.initial_state = 1 if initial_state else 0
    c.final_state = 1 if output_final_state else 0
    c.g_dtype = _dtype_code("g_dtype", "f32" if g_dtype is None else g_dtype)
    c.beta_activation = (2 if allow_neg_eigval else 1) if use_beta_sigmoid_in_kernel else 0
    c.gate = (1 if dt_bias else 2) if use_gate_in_kernel else 0
    c.state_v_first = 1 if state_v_first else 0
    if pool is None:
        c.pool = 0
    else:
        code = _dtype_code("pool", pool)
        if code not in (F32, BF16):
            raise QlaError(f"{_OP}pool: a state pool is f32 or bf16, not {pool}")
        c.pool = 1 if code == F32 else 2
        c.pool_k_first = 1 if pool_k_first else 0
        c.pool_checkpoints = 1 if pool_checkpoints else 0
    err = ctypes.create_string_buffer(65536)
    _check(_lib().qla_gdn_forward_warmup(ctypes.byref(c), err, len(err)), err)
    if backward:
        _check(_lib().qla_gdn_backward_warmup(ctypes.byref(c), 1 if dht else 0, 1 if initial_state else 0, err,
                                              len(err)), err)


def warmup_recurrent(dtype=None, K: int = 128, V: int = 128, state_dtype=None, g_dtype=None, beta_dtype=None,
                     use_qk_l2norm: bool = True, use_beta_sigmoid_in_kernel: bool = False,
                     allow_neg_eigval: bool = False, use_gate_in_kernel: bool = False, dt_bias: bool = True,
                     pool_k_first: bool = False) -> None:
    """Compiles (and loads into the current CUDA context) the decode / verify
    kernel of one configuration (:func:`recurrent`), so that a later call
    costs no compile and may be captured. dtype: bf16 (default) or f16;
    state_dtype: the pool's, f32 (default) or bf16; g_dtype, beta_dtype: f32
    (default) or dtype. Dtypes by name ("bf16") need no torch, and compiling
    needs no GPU."""
    lib = _lib()
    if not hasattr(lib, "qla_gdn_recurrent_warmup"):
        raise QlaError(f"{library_path()} has no qla_gdn_recurrent_warmup: it is older than this Python package")
    c = _RecConfig()
    c.dtype = _dtype_code("dtype", "bf16" if dtype is None else dtype)
    c.g_dtype = _dtype_code("g_dtype", "f32" if g_dtype is None else g_dtype)
    c.beta_dtype = _dtype_code("beta_dtype", "f32" if beta_dtype is None else beta_dtype)
    c.state_dtype = _dtype_code("state_dtype", "f32" if state_dtype is None else state_dtype)
    c.k, c.v = int(K), int(V)
    c.use_qk_l2norm = 1 if use_qk_l2norm else 0
    c.beta_activation = (2 if allow_neg_eigval else 1) if use_beta_sigmoid_in_kernel else 0
    c.gate = (1 if dt_bias else 2) if use_gate_in_kernel else 0
    c.pool_k_first = 1 if pool_k_first else 0
    err = ctypes.create_string_buffer(65536)
    _check(lib.qla_gdn_recurrent_warmup(ctypes.byref(c), err, len(err)), err)


def workspace_bytes(B: int, T: int, Hqk: int, Hv: int, K: int, V: int, dtype_code: int = BF16) -> int:
    """The device scratch one call of these sizes uses (for planning memory;
    no torch needed). Validated as the call would be, on fake addresses."""
    lib = _lib()
    a = _new_args(lib, _Args, lib.qla_gdn_forward_args_init)
    fake = 1 << 40

    def put(ct, i, dtype, shape):
        ct.data = fake * (i + 1)
        ct.dtype = dtype
        ct.rank = len(shape)
        for j, n in enumerate(shape):
            ct.shape[j] = n

    put(a.q, 0, dtype_code, (B, T, Hqk, K))
    put(a.k, 1, dtype_code, (B, T, Hqk, K))
    put(a.v, 2, dtype_code, (B, T, Hv, V))
    put(a.g, 3, F32, (B, T, Hv))
    put(a.beta, 4, F32, (B, T, Hv))
    put(a.o, 5, dtype_code, (B, T, Hv, V))
    err = ctypes.create_string_buffer(4096)
    n = ctypes.c_size_t(0)
    _check(lib.qla_gdn_forward_workspace_bytes(ctypes.byref(a), ctypes.byref(n), err, len(err)), err)
    return n.value
