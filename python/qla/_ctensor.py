"""What the operators' ctypes bindings share (qla.gdn, qla.gla): the C ABI's
tensor struct and dtype codes, filling it from a torch tensor, the layout
tests that decide whether a view is copied first, and the error plumbing.
Each message starts with the operator's prefix `op` ("chunk_gated_delta_rule: ")."""
from __future__ import annotations

import ctypes

from ._lib import QlaError

BF16, F16, F32, I32, I64 = 0, 1, 2, 3, 4
NAMES = {"bf16": BF16, "bfloat16": BF16, "f16": F16, "float16": F16, "f32": F32, "float32": F32,
         "i32": I32, "int32": I32, "i64": I64, "int64": I64}


class Tensor(ctypes.Structure):
    """qla_gdn_tensor / qla_gla_tensor (the same layout)."""
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * 4),
        ("strides", ctypes.c_int64 * 4),
        ("has_strides", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
    ]


assert ctypes.sizeof(Tensor) == 88


def check(rc: int, err) -> None:
    """A C ABI call's status: the message in `err` as QlaError."""
    if rc != 0:
        raise QlaError(err.value.decode(errors="replace"))


def dtype_code(op: str, name: str, dtype, who: str) -> int:
    """The C ABI code of a torch dtype or a dtype name ("bf16", "float32", ...:
    no torch needed, e.g. for warmup on a machine without it)."""
    if isinstance(dtype, str):
        if dtype not in NAMES:
            raise QlaError(f"{op}{name} = {dtype!r} is not a dtype name ({', '.join(NAMES)})")
        return NAMES[dtype]
    import torch
    codes = {torch.bfloat16: BF16, torch.float16: F16, torch.float32: F32, torch.int32: I32, torch.int64: I64}
    if dtype not in codes:
        raise QlaError(f"{op}{name} has dtype {dtype}, which {who} does not take")
    return codes[dtype]


def fill(op: str, ct: Tensor, name: str, t, who: str) -> None:
    """ct = the torch tensor t (pointer, dtype, shape, strides)."""
    if t.dim() < 1 or t.dim() > 4:
        raise QlaError(f"{op}{name} must have 1 to 4 dims, got shape {list(t.shape)}")
    if t.numel() == 0:
        raise QlaError(f"{op}{name} is empty (shape {list(t.shape)})")
    ct.data = t.data_ptr()
    ct.dtype = dtype_code(op, name, t.dtype, who)
    ct.rank = t.dim()
    for i, (n, s) in enumerate(zip(t.shape, t.stride())):
        ct.shape[i] = n
        ct.strides[i] = s
    ct.has_strides = 1


def tma_friendly(t) -> bool:
    """Unit last-dim stride, 16-byte aligned rows and pointer (what the C++
    layer requires of the tensors its kernels read with TMA)."""
    es = t.element_size()
    if t.data_ptr() % 16:
        return False
    for i, (n, s) in enumerate(zip(t.shape, t.stride())):
        if n == 1:
            continue
        if i == t.dim() - 1:
            if s != 1:
                return False
        elif s < 1 or (s * es) % 16:
            return False
    return True


def unit_last(t) -> bool:
    return (t.shape[-1] == 1 or t.stride(-1) == 1) and all(
        s >= 1 for n, s in zip(t.shape, t.stride()) if n > 1) and t.data_ptr() % t.element_size() == 0


def as_tensor(op: str, name: str, t, device):
    """t, checked to be a CUDA torch tensor (on `device` unless None)."""
    import torch
    if not isinstance(t, torch.Tensor):
        raise QlaError(f"{op}{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_cuda:
        raise QlaError(f"{op}{name} must be a CUDA tensor, got a tensor on {t.device}")
    if device is not None and t.device != device:
        raise QlaError(f"{op}{name} is on {t.device} but q is on {device}")
    return t
