"""Where a QLA kernel spills: ptxas reports one number of spill bytes for a
whole kernel; this counts the local-memory stores and loads (STL, LDL) of
the compiled SASS per .qla line and per warpgroup role, through the line
info that `qlac --line-info` puts into the cubin.

    python3 bench/spill_report.py kernels/gdn/gdn_bwd_fused.qla -D DT=f16 [--kernel K] [--top 20]

Needs nvdisasm: the CUDA toolkit's (/usr/local/cuda/bin) or PyPI's
`nvidia-cuda-nvdisasm` wheel (`pip install nvidia-cuda-nvdisasm`; found in
that package's bin/ folder), or --nvdisasm PATH. qlac is $QLAC, else
build/tools/qlac. Lines of the device headers (runtime/include/qla/device)
are listed under their own file names in the first list, and counted at the
.qla statement they were inlined into (nvdisasm's inline line info) in the
second list and in the roles' totals.
"""
import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_nvdisasm(given):
    if given:
        return given
    cands = [shutil.which("nvdisasm"), "/usr/local/cuda/bin/nvdisasm"]
    try:
        import nvidia  # the PyPI wheels' namespace package
        for base in getattr(nvidia, "__path__", []):
            cands += glob.glob(os.path.join(base, "*", "bin", "nvdisasm"))
    except ImportError:
        pass
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    sys.exit("spill_report: no nvdisasm (install the CUDA toolkit's, or `pip install nvidia-cuda-nvdisasm`, "
             "or give --nvdisasm PATH)")


def roles_of(path):
    """(first line, last line, role name) of each `role NAME:` block of the file."""
    lines = open(path).read().splitlines()
    out = []
    for i, text in enumerate(lines):
        m = re.match(r"\s*role\s+(\w+)\s*:", text)
        if not m:
            continue
        depth, started = 0, False
        for j in range(i, len(lines)):
            code = lines[j].split("//")[0]
            for ch in code:
                if ch == "{":
                    depth, started = depth + 1, True
                elif ch == "}":
                    depth -= 1
            if started and depth == 0:
                out.append((i + 1, j + 1, m.group(1)))
                break
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("qla")
    ap.add_argument("-D", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--kernel")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--nvdisasm")
    args = ap.parse_args()
    qlac = os.environ.get("QLAC") or os.path.join(ROOT, "build", "tools", "qlac")
    nvdisasm = find_nvdisasm(args.nvdisasm)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        cmd = [qlac, args.qla, "--line-info", "--emit=cubin", "--ptxas-verbose", "-o", cubin]
        for d in args.D:
            cmd += ["-D", d]
        if args.kernel:
            cmd += ["--kernel", args.kernel]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(p.stdout + p.stderr)
        for line in (p.stdout + p.stderr).splitlines():
            if "spill" in line or "Used" in line:
                print("ptxas:", line.strip().replace("ptxas info    : ", "").replace("ptxas         . ", ""))
        sass = subprocess.run([nvdisasm, "--print-line-info-inline", cubin], capture_output=True, text=True,
                              check=True).stdout
    # An inlined device helper's instruction counts at the helper's line and,
    # for the role, at the .qla line it was inlined at (the outermost one).
    here, site, counts, sites = None, None, collections.Counter(), collections.Counter()
    for line in sass.splitlines():
        m = re.search(r'//## File "([^"]+)", line (\d+)', line)
        if m:
            here = (m.group(1), int(m.group(2)))
            outer = re.findall(r'inlined at "([^"]+)", line (\d+)', line)
            site = (outer[-1][0], int(outer[-1][1])) if outer else here
        elif re.search(r"\b(STL|LDL)\b", line):
            kind = "STL" if "STL" in line else "LDL"
            counts[(here, kind)] += 1
            sites[(site, kind)] += 1
    src = os.path.abspath(args.qla)
    lines = open(src).read().splitlines()
    roles = roles_of(src)
    per_role = collections.Counter()
    per_line = collections.Counter()
    per_site = collections.Counter()
    for (where, kind), n in counts.items():
        per_line[where] += n
    for (where, kind), n in sites.items():
        name = "?"
        if where and os.path.abspath(where[0]) == src:
            name = next((r for a, b, r in roles if a <= where[1] <= b), "(outside roles)")
        elif where:
            name = "(" + os.path.basename(where[0]) + ")"
        per_role[(name, kind)] += n
        per_site[where] += n
    total = sum(counts.values())
    print(f"{total} local-memory instructions (STL + LDL) in the SASS")
    for name in sorted({r for r, _ in per_role}):
        print(f"  {name:24s} STL {per_role[(name, 'STL')]:5d}  LDL {per_role[(name, 'LDL')]:5d}")
    def show(title, counter):
        print(title)
        for where, n in counter.most_common(args.top):
            if where and os.path.abspath(where[0]) == src:
                text = lines[where[1] - 1].strip() if where[1] <= len(lines) else ""
                print(f"  {n:5d}  {os.path.basename(where[0])}:{where[1]}  {text[:90]}")
            else:
                print(f"  {n:5d}  {where[0] if where else '?'}:{where[1] if where else '?'}")
    show(f"top {args.top} lines (a device helper's own line where inlined):", per_line)
    show(f"top {args.top} .qla lines (device helpers counted where they are inlined):", per_site)
    return 0


if __name__ == "__main__":
    sys.exit(main())
