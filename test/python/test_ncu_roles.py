"""bench/ncu_roles.py (warp-state samples per role and .qla line from ncu's
source page and nvdisasm's line table) on a synthetic kernel; no GPU.

The kernel has two roles; `load`'s put (line 4) waits in a retry loop that
ptxas placed out of line, after `math`'s code (lines 7-8), with the line
info of a device header. The loop's samples must count for line 4 (role
load), not for line 8 (role math, the last .qla line before the block);
the header instruction inside `math`'s body counts for line 8. Both ncu CSV
layouts are read: `--print-source sass` (one table) and `cuda,sass` (a
section per file, an instruction listed once per file that names it).
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "bench", "ncu_roles.py")

QLA = """kernel k(X: f32[T]) grid(1) threads(256)
{
  role load: warpgroup 0 {
    put ch -> (a) { copy X[0 :+ 64] -> a }
  }
  role math: warpgroup 1 {
    get ch -> (a) {
      frag f: f32[64] = 0.0
    }
  }
}
"""

LISTING = """\t//## File "/x/k.qla", line 4
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/              @!P0 BRA `(.L_x_1) ;
.L_x_0:
\t//## File "/x/k.qla", line 8
        /*0020*/                   FADD R2, R2, R3 ;
\t//## File "/x/qla/device/math.cuh", line 14
        /*0030*/                   MUFU.EX2 R2, R2 ;
\t//## File "/x/k.qla", line 8
        /*0040*/                   EXIT ;
.L_x_1:
\t//## File "/x/qla/device/mbarrier.cuh", line 56
        /*0050*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R0 ;
        /*0060*/              @!P0 BRA `(.L_x_1) ;
        /*0070*/                   BRA `(.L_x_0) ;
\t//## File "/x/qla/device/regs.cuh", line 20
        /*0080*/                   BRA 0x80;
"""

# (offset, SASS, samples, long_sb, no_inst)
INSTS = [(0x00, "MOV R1, c[0x0][0x28]", 1, 0, 1), (0x10, "@!P0 BRA 0x7f0050", 2, 2, 0),
         (0x20, "FADD R2, R2, R3", 3, 0, 3), (0x30, "MUFU.EX2 R2, R2", 5, 0, 5), (0x40, "EXIT", 0, 0, 0),
         (0x50, "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R0", 40, 40, 0),
         (0x60, "@!P0 BRA 0x7f0050", 30, 30, 0), (0x70, "BRA 0x7f0020", 1, 1, 0), (0x80, "BRA 0x7f0080", 0, 0, 0)]
BASE = 0x7F0000
COLS = ["Warp Stall Sampling (All Samples)", "stall_long_sb", "stall_no_inst", "stall_long_sb (Not Issued)"]


def sass_csv():
    rows = ['"Address","Source",' + ",".join(f'"{c}"' for c in COLS)]
    for off, text, s, lsb, ni in INSTS:
        rows.append(f'"{BASE + off:#x}","{text}","{s}","{lsb}","{ni}","0"')
    return "\n".join(rows) + "\n"


def sectioned_csv():
    out = []
    # the .qla section lists the instructions its lines name; the headers' the rest;
    # an instruction may be listed in both (inlined): it must count once.
    sections = {"/x/k.qla": [0x00, 0x10, 0x20, 0x30, 0x40], "/x/qla/device/mbarrier.cuh": [0x50, 0x60, 0x70],
                "/x/qla/device/math.cuh": [0x30], "/x/qla/device/regs.cuh": [0x80]}
    by_off = {i[0]: i for i in INSTS}
    for path, offs in sections.items():
        out.append(f'"File Path","{path}"')
        out.append('"Function Name","k"')
        out.append('"Line No","Source","Address","Source",' + ",".join(f'"{c}"' for c in COLS))
        out.append('"4","put ch","-","-","0","0","0","0"')
        for off in offs:
            _, text, s, lsb, ni = by_off[off]
            out.append(f'"","","{BASE + off:#x}","      {text}","{s}","{lsb}","{ni}","0"')
    return "\n".join(out) + "\n"


def run(csv_text, d, name):
    paths = {}
    for n, t in (("k.qla", QLA), ("k.sass", LISTING), (name, csv_text)):
        paths[n] = os.path.join(d, n)
        with open(paths[n], "w") as f:
            f.write(t)
    r = subprocess.run([sys.executable, TOOL, paths[name], paths["k.sass"], paths["k.qla"], "--top", "5"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: ncu_roles.py exited {r.returncode}: {r.stderr}")
    return r.stdout


def check(out, what):
    lines = out.splitlines()
    ok = True

    def expect(cond, msg):
        nonlocal ok
        if not cond:
            print(f"FAIL ({what}): {msg}\n{out}")
            ok = False

    expect(lines[0] == "82 samples", "the total is the samples of every instruction once")
    role = {l.split()[1]: l for l in lines if l.strip().startswith("role ")}
    # load: lines 4 (MOV, BRA) + the out-of-line loop (TRYWAIT, BRA, BRA) = 1 + 2 + 40 + 30 + 1 = 74
    expect("load" in role and " 90.2%" in role["load"], "role load has 74 of 82 samples (the loop's included)")
    # math: FADD 3 + the header's MUFU 5 = 8
    expect("math" in role and "  9.8%" in role["math"], "role math has 8 of 82 samples (none of the loop's)")
    top = [l for l in lines if l.startswith("     4 load")]
    expect(len(top) == 1 and "long_sb" in top[0], "line 4 leads, waiting (long scoreboard)")
    return ok


def main():
    with tempfile.TemporaryDirectory() as d:
        ok = check(run(sass_csv(), d, "a.csv"), "sass table")
        ok = check(run(sectioned_csv(), d, "b.csv"), "cuda,sass sections") and ok
    print("ncu_roles: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
