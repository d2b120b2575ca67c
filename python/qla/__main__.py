"""python -m qla: what this QLA installation is and what it can do here.

    $ python -m qla
    QLA 0.1.0
    libqla.so: /venv/lib/python3.11/site-packages/qla/libqla.so
    NVRTC: 13.0
    kernel cache: /home/me/.cache/qla
    GPU: no (no CUDA driver (libcuda.so.1 not found: ...))
    qlac: /venv/bin/qlac

Exit status 0, or 1 with a message when libqla.so cannot be found or loaded.
"""
from __future__ import annotations

import shutil
import sys

from . import QlaError, cache_dir, gpu_available, library_path, nvrtc_version, version


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python -m qla   (prints the QLA and NVRTC versions, the kernel cache "
              "folder and whether a GPU is usable)", file=sys.stderr)
        return 0 if argv[0] in ("-h", "--help") else 2
    try:
        lines = [f"QLA {version()}", f"libqla.so: {library_path()}", f"NVRTC: {nvrtc_version()}",
                 f"kernel cache: {cache_dir()}"]
        ok, why = gpu_available()
    except QlaError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    lines.append(f"GPU: {'yes' if ok else 'no'} ({why})")
    lines.append(f"qlac: {shutil.which('qlac') or 'not on the PATH'}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
