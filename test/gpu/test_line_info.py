"""compute-sanitizer points at .qla lines (issue 7, item 5): a planted
out-of-bounds write in test/gpu/kernels/planted_oob.qla, JIT-compiled with
QLA_LINE_INFO=1 (#line directives + NVRTC --generate-line-info), must be
reported by memcheck at the .qla file and line of its store; the same kernel
with an honest output buffer must be clean.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 test/gpu/test_line_info.py

The plant: Y's allocation has 64 rows, but the kernel is told it has R = 128
(a view object that reports the larger shape over the smaller buffer), so the
kernel's bounds check (rows < R) lets rows 64 .. 71 through, past the end of
the allocation. PyTorch's caching allocator is off in the sanitized child so
that the buffer ends where its cudaMalloc does.

Prints SKIP (exit 0) without PyTorch, a GPU or compute-sanitizer; PASS/FAIL
lines otherwise, exit 1 on a failure.
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNEL = os.path.join(HERE, "kernels", "planted_oob.qla")
STORE_LINE = 11  # the line of `copy f -> Y[...]` in planted_oob.qla


class _Claimed:
    """A tensor as the kernel launcher sees it (data_ptr, dim, shape, stride),
    claiming more rows than its storage has."""

    def __init__(self, t, rows):
        self._t = t
        self.shape = (rows,) + tuple(t.shape[1:])

    def data_ptr(self):
        return self._t.data_ptr()

    def dim(self):
        return self._t.dim()

    def stride(self):
        return self._t.stride()


def child(mode):
    import torch
    try:
        import qla  # an installed package (pip install .), or PYTHONPATH=python
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import qla
    k = qla.compile(KERNEL)
    x = torch.randn(128, 64, device="cuda")
    if mode == "planted":
        y = torch.zeros(64, 64, device="cuda")  # 64 rows really
        k(x, _Claimed(y, 128))
    else:
        y = torch.zeros(128, 64, device="cuda")
        k(x, y)
        torch.cuda.synchronize()
        ok = torch.equal(y[8:72], x[0:64]) and not bool(y[:8].any()) and not bool(y[72:].any())
        print("honest run:", "matches" if ok else "WRONG")
        if not ok:
            sys.exit(3)
    torch.cuda.synchronize()


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return 0
    try:
        import torch
    except ImportError:
        print("SKIP: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("SKIP: no GPU (torch.cuda.is_available() is False)")
        return 0
    san = os.environ.get("COMPUTE_SANITIZER") or shutil.which("compute-sanitizer") or \
        "/usr/local/cuda/bin/compute-sanitizer"
    if not os.path.exists(san):
        print("SKIP: compute-sanitizer not found (set COMPUTE_SANITIZER)")
        return 0
    env = dict(os.environ, QLA_LINE_INFO="1", PYTORCH_NO_CUDA_MEMORY_CACHING="1")
    failures = 0
    results = {}
    for mode in ("planted", "honest"):
        cmd = [san, "--tool", "memcheck", "--print-limit", "20", "--kernel-name", "kns=qla_planted_oob",
               sys.executable, os.path.abspath(__file__), "--child", mode]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        results[mode] = p.stdout + p.stderr
        summary = re.search(r"ERROR SUMMARY: (\d+) error", results[mode])
        results[mode + "_errors"] = int(summary.group(1)) if summary else None
    out = results["planted"]
    n = results["planted_errors"]
    where = re.findall(r"at (?:\S+ )?in (\S*planted_oob\.qla):(\d+)", out) or \
        re.findall(r"(\S*planted_oob\.qla):(\d+)", out)
    lines = sorted({int(l) for _, l in where})
    ok = bool(n) and "Invalid __global__ write" in out and lines == [STORE_LINE]
    failures += 0 if ok else 1
    print(f"  planted OOB write: {n} errors, reported at planted_oob.qla lines {lines} "
          f"(expected [{STORE_LINE}])  {'PASS' if ok else 'FAIL'}")
    if not ok:
        print("\n".join(out.splitlines()[:60]))
    h = results["honest_errors"]
    ok = h == 0 and "honest run: matches" in results["honest"]
    failures += 0 if ok else 1
    print(f"  honest buffer: {h} errors  {'PASS' if ok else 'FAIL'}")
    if not ok:
        print("\n".join(results["honest"].splitlines()[:40]))
    print("ALL PASS" if failures == 0 else f"{failures} FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
