"""python -m qla: what this QLA installation is and what it can do here; and
`python -m qla warmup`: the GDN kernels a process will need, compiled ahead.

    $ python -m qla
    QLA 0.1.0
    libqla.so: /venv/lib/python3.11/site-packages/qla/libqla.so
    NVRTC: 13.0
    kernel cache: /home/me/.cache/qla
    prebuilt kernels: /venv/lib/python3.11/site-packages/qla/prebuilt
    GPU: no (no CUDA driver (libcuda.so.1 not found: ...))
    qlac: /venv/bin/qlac

    $ python -m qla warmup --serving --head-dim 128 [--dtype bf16] [--cache-dir DIR] [--jobs N]
                           [--only TEXT] [--list]

warmup compiles the GDN kernels of the configurations a serving or a
training process calls (below) into the kernel cache ($QLA_CACHE_DIR, or
--cache-dir), so that a later process's first call costs no compile. No GPU
is needed (with one, each configuration is also loaded once, as a check). A
folder filled with --cache-dir can be shipped read-only: put it in
$QLA_PREBUILT_DIRS, or as prebuilt/ beside libqla.so (`pip wheel .` packs
python/qla/prebuilt/ when it exists). Entries serve only the NVRTC version
and GPU architecture they were built with (both are in their keys).

  --serving   the prefill into a V-first state pool (fp32 and bf16 pools,
              varlen int32 cu_seqlens, q/k L2 norm in the kernel or not,
              beta f32 or the model dtype; g f32), and decode / speculative
              verify (fp32 and bf16 pools; the gate and beta from the raw
              A_log, a, dt_bias, b in the model dtype, as vLLM's decode, or
              g and beta given in f32; q/k L2 norm in the kernel);
              --k-first-pool: pools [slots, Hv, K, V]; --prefix-caching:
              the prefill also writes states every checkpoint_every tokens
  --training  forward and backward as transformers' Qwen3.5 (L2 norm in
              the kernel, beta in the model dtype), FLA's GatedDeltaNet
              layer (in-kernel gate and beta sigmoid, V-first states) and a
              Megatron-style packed call (varlen, L2 norm outside) call them
  (neither: both)

Exit status 0; 1 when a configuration fails to compile (each failure is
printed), 2 on bad arguments.
"""
from __future__ import annotations

import shutil
import sys


def info() -> int:
    from . import QlaError, cache_dir, gpu_available, library_path, nvrtc_version, prebuilt_dirs, version
    try:
        lines = [f"QLA {version()}", f"libqla.so: {library_path()}", f"NVRTC: {nvrtc_version()}",
                 f"kernel cache: {cache_dir()}", f"prebuilt kernels: {':'.join(prebuilt_dirs()) or 'none'}"]
        ok, why = gpu_available()
    except QlaError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    lines.append(f"GPU: {'yes' if ok else 'no'} ({why})")
    lines.append(f"qlac: {shutil.which('qlac') or 'not on the PATH'}")
    print("\n".join(lines))
    return 0


def main(argv: list[str]) -> int:
    if argv and argv[0] == "warmup":
        from ._warmup import warmup
        return warmup(argv[1:])
    if argv:
        print("usage: python -m qla          (the QLA and NVRTC versions, the kernel cache and prebuilt "
              "folders, whether a GPU is usable)\n"
              "       python -m qla warmup   (compile the GDN kernels of serving and training calls ahead; "
              "--help)", file=sys.stderr)
        return 0 if argv[0] in ("-h", "--help") else 2
    return info()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
