"""Warp-state samples of a warp-specialized .qla kernel per role and per .qla
line, from Nsight Compute's SASS source page and the line table of the same
cubin (nvdisasm -g), so that no source file is needed on the profiling
machine.

On the GPU machine (the kernel JIT-compiled with QLA_LINE_INFO=1):

    QLA_LINE_INFO=1 ncu --section WarpStateStats --section SourceCounters \\
        -k regex:fwd_fused --launch-skip 1 --launch-count 1 -o prof \\
        python3 bench/gdn_profile.py ...
    ncu -i prof.ncu-rep --page source --csv --print-source sass > prof.csv

Here, the same kernel with its line table (its name, which hashes the source
and the specialization, must be the profiled one's):

    qlac kernels/gdn/gdn_fwd_fused.qla -D STORE_HT=1 --line-info --emit=cubin -o k.cubin
    nvdisasm -g -c k.cubin > k.sass
    python3 bench/ncu_roles.py prof.csv k.sass kernels/gdn/gdn_fwd_fused.qla [--top 30]

Prints, per role (the lines from `role NAME:` to its closing brace; "-" for
the rest), its share of the samples and its main stall reasons, then the
lines with the most samples. The instructions are matched by offset from the
kernel's first one, and their opcodes are compared: a mismatch stops it.
"""
import argparse
import csv
import re
import sys


def role_of_lines(qla_lines):
    """line number (1-based) -> role name: from each `role X:` line to the
    brace that closes its body."""
    roles = {}
    cur, depth = None, 0
    for n, text in enumerate(qla_lines, 1):
        code = text.split("//", 1)[0]
        m = re.match(r"\s*role\s+(\w+)\s*:", code)
        if m and cur is None:
            cur, depth = m.group(1), 0
        if cur is not None:
            roles[n] = cur
            depth += code.count("{") - code.count("}")
            if depth <= 0 and "}" in code:
                cur = None
    return roles


def sass_lines(listing):
    """offset -> (.qla line or 0, opcode) from `nvdisasm -g -c` output. An
    instruction of a device header or of the generated scaffolding counts for
    the last .qla line before it (the header's caller, mostly)."""
    out, line = {}, 0
    for text in open(listing):
        m = re.search(r'//## File "([^"]+)", line (\d+)', text)
        if m:
            if m.group(1).endswith(".qla"):
                line = int(m.group(2))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", text)
        if m:
            out[int(m.group(1), 16)] = (line, opcode(m.group(2)))
    return out


def opcode(ins):
    ins = re.sub(r"^@!?U?P\w+\s+", "", ins.strip())  # predicate guard
    return ins.split()[0] if ins else ""


def number(s):
    try:
        return float((s or "").replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="ncu --page source --csv --print-source sass")
    ap.add_argument("listing", help="nvdisasm -g -c of the same cubin")
    ap.add_argument("qla")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    qla_lines = open(a.qla).read().splitlines()
    roles = role_of_lines(qla_lines)
    table = sass_lines(a.listing)
    rows = list(csv.reader(open(a.csv, newline="")))
    head = next((i for i, r in enumerate(rows) if r[:2] == ["Address", "Source"]), None)
    if head is None:
        sys.exit("ncu_roles: no 'Address,Source' header in " + a.csv)
    hdr = rows[head]
    c_all = hdr.index("Warp Stall Sampling (All Samples)")
    stalls = [(i, c) for i, c in enumerate(hdr) if c.startswith("stall_") and "(Not Issued)" not in c]
    base = None
    per_line, per_role = {}, {}
    for r in rows[head + 1:]:
        if len(r) <= c_all or not r[0].startswith("0x"):
            continue
        addr = int(r[0], 16)
        base = addr if base is None else base
        off = addr - base
        line, op = table.get(off, (None, None))
        if op is None or op != opcode(r[1]):
            sys.exit(f"ncu_roles: instruction at +{off:#x} is '{r[1].strip()}' in the profile but "
                     f"'{op}' in {a.listing}: not the same cubin")
        s = number(r[c_all])
        reasons = {c: number(r[i]) for i, c in stalls}
        for key, d in ((line, per_line), (roles.get(line, "-"), per_role)):
            e = d.setdefault(key, [0.0, {}])
            e[0] += s
            for c, v in reasons.items():
                e[1][c] = e[1].get(c, 0.0) + v
    tot = sum(v[0] for v in per_role.values()) or 1.0

    def top_reasons(d, n=4):
        t = sum(d.values()) or 1.0
        return ", ".join(f"{c[6:]} {100 * v / t:.0f}%" for c, v in sorted(d.items(), key=lambda kv: -kv[1])[:n] if v)

    print(f"{tot:.0f} samples")
    for role, (s, d) in sorted(per_role.items(), key=lambda kv: -kv[1][0]):
        print(f"  role {role:6s} {100 * s / tot:5.1f}%   {top_reasons(d)}")
    print(f"top {a.top} lines (share of all samples; of the role's):")
    for ln, (s, d) in sorted(per_line.items(), key=lambda kv: -kv[1][0])[:a.top]:
        role = roles.get(ln, "-")
        text = qla_lines[ln - 1].strip() if ln and ln <= len(qla_lines) else "(generated)"
        print(f"  {ln:4d} {role:5s} {100 * s / tot:5.1f}% ({100 * s / (per_role[role][0] or 1):4.1f}%)  "
              f"{text[:70]:70s}  {top_reasons(d, 3)}")


if __name__ == "__main__":
    main()
