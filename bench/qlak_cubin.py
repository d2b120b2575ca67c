"""Writes the cubin of a cached QLA kernel: the entry of $QLA_CACHE_DIR (or
DIR) whose PTX defines a kernel matching NAME (a regular expression over the
entry name, e.g. '^qla_gdn_fwd_fused_[0-9a-f]+$'). For profiling on a machine
where the kernel was JIT-compiled: ncu's SASS page and `nvdisasm -g -c` of
this cubin go to bench/ncu_roles.py.

    python3 bench/qlak_cubin.py DIR NAME -o k.cubin [--line-info]

--line-info keeps only entries compiled with .qla line info (QLA_LINE_INFO=1),
whose cubins carry the line table. With several matches the newest entry is
written and the others are listed on stderr.

Entry format (runtime/src/KernelCache.cpp): "QLAK" | u32 version | u32 keyLen
| u32 0 | u64 cubinLen | u64 ptxLen | u64 infoLen | key | cubin | ptx | info |
u64 checksum, little-endian.
"""
import argparse
import os
import re
import struct
import sys


def read_entry(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 40 or data[:4] != b"QLAK":
        return None
    key_len, = struct.unpack_from("<I", data, 8)
    cubin_len, ptx_len, info_len = struct.unpack_from("<QQQ", data, 16)
    off = 40 + key_len
    cubin = data[off:off + cubin_len]
    ptx = data[off + cubin_len:off + cubin_len + ptx_len].decode("utf-8", "replace")
    if len(cubin) != cubin_len:
        return None
    return cubin, ptx


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("name")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--line-info", action="store_true")
    args = ap.parse_args()
    pat = re.compile(args.name)
    found = []
    for fn in os.listdir(args.dir):
        if not fn.endswith(".qlak"):
            continue
        path = os.path.join(args.dir, fn)
        e = read_entry(path)
        if not e:
            continue
        cubin, ptx = e
        names = re.findall(r"\.entry\s+([A-Za-z_][A-Za-z0-9_]*)", ptx)
        if not any(pat.search(n) for n in names):
            continue
        if args.line_info and ".loc" not in ptx:
            continue
        found.append((os.path.getmtime(path), path, names, cubin))
    if not found:
        sys.exit(f"qlak_cubin.py: no entry in {args.dir} defines a kernel matching {args.name!r}")
    found.sort()
    for _, path, names, _ in found[:-1]:
        print(f"qlak_cubin.py: also matches: {path} ({', '.join(names)})", file=sys.stderr)
    _, path, names, cubin = found[-1]
    with open(args.out, "wb") as f:
        f.write(cubin)
    print(f"{args.out}: {', '.join(names)} from {path} ({len(cubin)} bytes)")


if __name__ == "__main__":
    main()
