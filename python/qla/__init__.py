"""QLA from Python: JIT-compile .qla kernels and launch them on PyTorch tensors.

    import qla
    k = qla.compile("examples/gemm.qla", BN=128)
    k(A, B, C)                      # torch CUDA tensors, in the kernel's order

The heavy lifting is in libqla.so (the C ABI, compiler + runtime); it is found
through $QLA_LIBRARY (a path to libqla.so; overrides the rest), inside this
package (where `pip install .` puts it), or, in a source checkout, in
build/compiler. `python -m qla` says which one is used and what it can do.
"""
from __future__ import annotations

import ctypes

__all__ = ["compile", "compile_string", "Kernel", "QlaError", "library_path", "version",
           "nvrtc_version", "cache_dir", "prebuilt_dirs", "gpu_available", "trace_dump"]


from ._lib import QlaError, _load, _need, library_path  # noqa: E402 (the loader, qla/_lib.py)


def version() -> str:
    """QLA's version ("0.1.0")."""
    return _load().qla_version().decode()


def nvrtc_version() -> str:
    """The version of the NVRTC library libqla.so compiles with ("13.0")."""
    return _need("qla_nvrtc_version")().decode()


def cache_dir() -> str:
    """The kernel cache folder: $QLA_CACHE_DIR, else ~/.cache/qla (read once per process)."""
    return _need("qla_cache_dir")().decode()


def prebuilt_dirs() -> list:
    """The read-only folders of prebuilt kernels searched after cache_dir():
    $QLA_PREBUILT_DIRS (':'-separated), then prebuilt/ beside libqla.so (a
    wheel's ahead-of-time kernels, `python -m qla warmup --cache-dir`)."""
    s = _need("qla_prebuilt_dirs")().decode()
    return s.split(":") if s else []


def gpu_available() -> tuple[bool, str]:
    """(True, "sm_90a") when kernels can be launched here (a CUDA driver and an
    sm_90a device 0), else (False, the reason). Compiling needs no GPU."""
    msg = ctypes.create_string_buffer(1024)
    ok = _need("qla_gpu_available")(msg, 1024)
    return bool(ok), msg.value.decode()


def trace_dump(path: str) -> int:
    """Synchronizes the device and writes the traces of every loaded kernel
    compiled with tracing (QLA_TRACE=1 set before the kernels are compiled,
    or qlac --trace) to `path`, then clears them. Returns how many kernels it
    wrote (0: none is traced; no file). `python -m qla.trace FILE` prints
    a summary (docs/internals.md, "Tracing")."""
    fn = _need("qla_trace_dump")
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    err = ctypes.create_string_buffer(2048)
    n = fn(str(path).encode(), err, 2048)
    if n < 0:
        raise QlaError(err.value.decode())
    return n


def _defines(d: dict) -> bytes | None:
    if not d:
        return None
    return ";".join(f"{k}={v}" for k, v in d.items()).encode()


class Kernel:
    """A compiled kernel. Call it with its tensor arguments (in the kernel's
    order) and then its scalar arguments; `stream=` picks the CUDA stream
    (default: PyTorch's current stream)."""

    _CACHE = {0: "miss", 1: "memory", 2: "disk"}

    def __init__(self, handle):
        self._h = handle
        self._lib = _load()
        self.info = self._lib.qla_kernel_info(handle).decode()
        self.cache = self._CACHE.get(self._lib.qla_kernel_cache_hit(handle), "?")
        self.build_seconds = self._lib.qla_kernel_build_seconds(handle)
        self.tensor_names = [l.split()[1] for l in self.info.splitlines() if l.startswith("tensor ")]
        self.scalar_names = [l.split()[1] for l in self.info.splitlines() if l.startswith("scalar ")]

    def __del__(self):
        if getattr(self, "_h", None) and getattr(self, "_lib", None):
            self._lib.qla_kernel_free(self._h)
            self._h = None

    def __call__(self, *args, stream=None):
        nt = len(self.tensor_names)
        if len(args) != nt + len(self.scalar_names):
            raise QlaError(f"kernel takes {nt} tensors ({', '.join(self.tensor_names)}) and "
                           f"{len(self.scalar_names)} scalars; got {len(args)} arguments")
        tensors, scalars = args[:nt], args[nt:]
        c = ctypes
        ptrs = (c.c_void_p * nt)(*[t.data_ptr() for t in tensors])
        ranks = (c.c_int * nt)(*[t.dim() for t in tensors])
        shapes = [s for t in tensors for s in t.shape]
        strides = [s for t in tensors for s in t.stride()]
        shp = (c.c_int64 * max(1, len(shapes)))(*shapes)
        std = (c.c_int64 * max(1, len(strides)))(*strides)
        sc = (c.c_double * max(1, len(scalars)))(*[float(s) for s in scalars])
        if stream is None:
            import torch
            stream = torch.cuda.current_stream().cuda_stream
        elif hasattr(stream, "cuda_stream"):
            stream = stream.cuda_stream
        err = c.create_string_buffer(4096)
        rc = self._lib.qla_launch(self._h, nt, ptrs, ranks, shp, std, len(scalars), sc, c.c_void_p(stream), err, 4096)
        if rc != 0:
            raise QlaError(err.value.decode())


def compile(path: str, kernel: str | None = None, **defines) -> Kernel:
    """JIT-compiles `path` (specialization constants as keyword arguments)."""
    err = ctypes.create_string_buffer(65536)
    h = _load().qla_compile_file(str(path).encode(), _defines(defines),
                                 kernel.encode() if kernel else None, err, 65536)
    if not h:
        raise QlaError(err.value.decode())
    return Kernel(h)


def compile_string(source: str, filename: str = "<string>", kernel: str | None = None, **defines) -> Kernel:
    err = ctypes.create_string_buffer(65536)
    h = _load().qla_compile_string(source.encode(), filename.encode(), _defines(defines),
                                   kernel.encode() if kernel else None, err, 65536)
    if not h:
        raise QlaError(err.value.decode())
    return Kernel(h)


try:  # the GDN operator (torch is imported only when it is called)
    from .gdn import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule  # noqa: E402
    __all__ += ["chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule"]
except ImportError:  # pragma: no cover
    pass

try:  # the simple-GLA forward (torch is imported only when it is called)
    from .gla import chunk_simple_gla  # noqa: E402
    __all__.append("chunk_simple_gla")
except ImportError:  # pragma: no cover
    pass
