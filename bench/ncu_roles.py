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

(`--print-source cuda,sass` works too: its per-file sections are read for
their instructions.) Prints, per role (the lines from `role NAME:` to its
closing brace; "-" for the rest), its share of the samples and its main
stall reasons, then the lines with the most samples. The instructions are
matched by offset from the kernel's first one, and their opcodes are
compared: a mismatch stops it.

An instruction of a device header counts for the last .qla line before it,
except in a block that ptxas placed out of line (the retry loop of an
mbarrier wait, mostly, where a waiting role's samples pile up): such a
block counts for the .qla line whose branch enters it (the get or put that
waits), so that a role's waits are not charged to whatever role's code
precedes the block in the binary.
"""
import argparse
import csv
import re
import sys


def role_of_lines(qla_lines, pattern=r"\s*role\s+(\w+)\s*:"):
    """line number (1-based) -> role name: from each `role X:` line to the
    brace that closes its body (with the pattern of `fn X(`: function
    bodies, whose instructions count for the role they are inlined into)."""
    roles = {}
    cur, depth = None, 0
    for n, text in enumerate(qla_lines, 1):
        code = text.split("//", 1)[0]
        m = re.match(pattern, code)
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
    the last .qla line before it (the header's caller, mostly), except in an
    out-of-line block entered by a branch from a .qla line (see the module's
    doc): that block counts for the entering line."""
    ins = []  # (offset, line, direct: the line info names a .qla file, opcode, branch label, predicated)
    labels = {}
    line, direct = 0, False
    pending = []
    for text in open(listing):
        m = re.search(r'//## File "([^"]+)", line (\d+)', text)
        if m:
            direct = m.group(1).endswith(".qla")
            if direct:
                line = int(m.group(2))
            continue
        m = re.match(r"\s*(\.L_x_\d+):", text)
        if m:
            pending.append(m.group(1))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", text)
        if m:
            off = int(m.group(1), 16)
            for lb in pending:
                labels[lb] = off
            pending = []
            body = m.group(2)
            t = re.search(r"BRA\s+(?:\S+,\s*)?`?\((\.L_x_\d+)\)", body)
            ins.append((off, line, direct, opcode(body), t.group(1) if t else None,
                        bool(re.match(r"\s*@", body))))
    out = {off: (ln, op) for off, ln, _, op, _, _ in ins}
    # Out-of-line blocks: from a label that a branch of a .qla line targets,
    # the instructions without .qla line info up to the first unpredicated
    # branch (the jump back) count for that line.
    entry = {}
    for off, ln, direct, op, target, _ in ins:
        if direct and target and target not in entry:
            entry[target] = ln
    index = {off: k for k, (off, *_rest) in enumerate(ins)}
    for label, ln in entry.items():
        k = index.get(labels.get(label, -1))
        while k is not None and k < len(ins):
            off, _, direct, op, target, pred = ins[k]
            if direct:
                break
            out[off] = (ln, op)
            if op == "BRA" and not pred:
                break
            k += 1
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
    fns = role_of_lines(qla_lines, r"\s*fn\s+(\w+)\s*\(")
    table = sass_lines(a.listing)
    rows = list(csv.reader(open(a.csv, newline="")))
    # --print-source sass: one table under an "Address,Source" header;
    # cuda,sass: a section per source file ("Line No,Source,Address,Source"),
    # each instruction under the file its line info names (read once each).
    hdr, c_addr, insts = None, 0, {}
    for r in rows:
        if r[:2] == ["Address", "Source"] or r[:3] == ["Line No", "Source", "Address"]:
            hdr, c_addr = r, (0 if r[0] == "Address" else 2)
            continue
        if hdr and len(r) > c_addr + 1 and r[c_addr].startswith("0x"):
            insts.setdefault(int(r[c_addr], 16), r)
    if hdr is None:
        sys.exit("ncu_roles: no 'Address,Source' header in " + a.csv)
    c_all = hdr.index("Warp Stall Sampling (All Samples)")
    stalls = [(i, c) for i, c in enumerate(hdr) if c.startswith("stall_") and "(Not Issued)" not in c]
    base = min(insts) if insts else 0
    per_line, per_role = {}, {}
    last_role = "-"  # a function's lines count for the role whose code surrounds them
    for addr in sorted(insts):
        r = insts[addr]
        if len(r) <= c_all:
            continue
        off = addr - base
        line, op = table.get(off, (None, None))
        if op is None or op != opcode(r[c_addr + 1]):
            sys.exit(f"ncu_roles: instruction at +{off:#x} is '{r[c_addr + 1].strip()}' in the profile but "
                     f"'{op}' in {a.listing}: not the same cubin")
        s = number(r[c_all])
        reasons = {c: number(r[i]) for i, c in stalls}
        role = roles.get(line)
        if role:
            last_role = role
        elif line in fns:
            role = last_role
        for key, d in ((line, per_line), (role or "-", per_role)):
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
        role = roles.get(ln) or (f"fn {fns[ln]}" if ln in fns else "-")
        text = qla_lines[ln - 1].strip() if ln and ln <= len(qla_lines) else "(generated)"
        share = f"({100 * s / per_role[role][0]:4.1f}%)" if per_role.get(role, [0])[0] else "      "
        print(f"  {ln:4d} {role:5s} {100 * s / tot:5.1f}% {share}  "
              f"{text[:70]:70s}  {top_reasons(d, 3)}")


if __name__ == "__main__":
    main()
