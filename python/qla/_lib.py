"""The loader of libqla.so (a module of its own: qla/__init__.py and the
operator modules, gdn.py, gla.py, _ctensor.py, import it, and it imports
none of them, so no import cycle): where the library is found, loading it
once with the argument types of the generic C ABI, and QlaError."""
from __future__ import annotations

import ctypes
import os
from pathlib import Path


class QlaError(RuntimeError):
    """A compile or launch error; the message holds QLA's diagnostics."""


def library_path() -> str:
    """The libqla.so this package loads: $QLA_LIBRARY, else the one inside the
    package, else a source checkout's build/compiler/libqla.so."""
    env = os.environ.get("QLA_LIBRARY")
    if env:
        if not Path(env).is_file():
            raise QlaError(f"QLA_LIBRARY={env}: no such file (it must name libqla.so itself)")
        return env
    here = Path(__file__).resolve().parent
    cands = (here / "libqla.so", here.parent.parent / "build" / "compiler" / "libqla.so")
    for cand in cands:
        if cand.is_file():
            return str(cand)
    raise QlaError("libqla.so not found (looked for " + " and ".join(map(str, cands)) + "): "
                   "install the package with `pip install .`, build QLA (scripts/bootstrap.sh) "
                   "or set QLA_LIBRARY to the path of libqla.so")


_lib = None


def _load():
    global _lib
    if _lib is None:
        path = library_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:  # e.g. libnvrtc.so.13 missing: the message names it
            raise QlaError(f"cannot load {path}: {e}") from None
        c = ctypes
        lib.qla_compile_file.restype = c.c_void_p
        lib.qla_compile_file.argtypes = [c.c_char_p, c.c_char_p, c.c_char_p, c.c_char_p, c.c_size_t]
        lib.qla_compile_string.restype = c.c_void_p
        lib.qla_compile_string.argtypes = [c.c_char_p, c.c_char_p, c.c_char_p, c.c_char_p, c.c_char_p, c.c_size_t]
        lib.qla_kernel_free.argtypes = [c.c_void_p]
        lib.qla_kernel_info.restype = c.c_char_p
        lib.qla_kernel_info.argtypes = [c.c_void_p]
        lib.qla_kernel_cache_hit.restype = c.c_int
        lib.qla_kernel_cache_hit.argtypes = [c.c_void_p]
        lib.qla_kernel_build_seconds.restype = c.c_double
        lib.qla_kernel_build_seconds.argtypes = [c.c_void_p]
        lib.qla_launch.restype = c.c_int
        lib.qla_launch.argtypes = [c.c_void_p, c.c_int, c.POINTER(c.c_void_p), c.POINTER(c.c_int),
                                   c.POINTER(c.c_int64), c.POINTER(c.c_int64), c.c_int,
                                   c.POINTER(c.c_double), c.c_void_p, c.c_char_p, c.c_size_t]
        lib.qla_version.restype = c.c_char_p
        # Newer than the first libqla.so: bound where present (see _need).
        if hasattr(lib, "qla_nvrtc_version"):
            lib.qla_nvrtc_version.restype = c.c_char_p
        if hasattr(lib, "qla_cache_dir"):
            lib.qla_cache_dir.restype = c.c_char_p
        if hasattr(lib, "qla_prebuilt_dirs"):
            lib.qla_prebuilt_dirs.restype = c.c_char_p
        if hasattr(lib, "qla_gpu_available"):
            lib.qla_gpu_available.restype = c.c_int
            lib.qla_gpu_available.argtypes = [c.c_char_p, c.c_size_t]
        _lib = lib
    return _lib


def _need(name: str):
    lib = _load()
    if not hasattr(lib, name):
        raise QlaError(f"{library_path()} has no {name}: it is older than this Python package "
                       f"(rebuild QLA or point QLA_LIBRARY at a newer libqla.so)")
    return getattr(lib, name)
