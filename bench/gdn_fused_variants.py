#!/usr/bin/env python3
"""Speed-of-light and layout variants of kernels/gdn/gdn_fwd_fused.qla (the
A/B of 2026-12-04, docs/performance.md, "Where the fused step goes"): each
is the kernel with some work taken out (wrong outputs, right timing: what a
role's or a path's cost is) or moved. Writes DIR/NAME/gdn_fwd_fused.qla for
every NAME asked for; time them with one library through QLA_KERNEL_DIR
(BV = 64 forced; the edits keep only the 64-wide slices' paths meaningful):

    python3 bench/gdn_fused_variants.py OUTDIR noaux rec noepi ...
    QLA_KERNEL_DIR=OUTDIR/noaux QLA_GDN_FUSED_BV=64 PYTHONPATH=python \\
        python3 bench/gdn_paths.py --fused-only --heads 16/64 --layouts 1x32768

Variants (cumulative where named so):
  noinv     aux: no inverse (A = L)
  noaux     aux: no K Kᵀ, no inverse (A = I)
  mathonly  noaux + paux puts P = 0 without Q Kᵀ
  rec       mathonly + math without O's products (o = eo)
  rec2      rec + no O store (no staging, no TMA store)
  rec3      rec2 + no `pm` channel at all
  chain     rec3 + no decay of Sᵀ, no mask of V_newᵀ
  noepi     the kernel without O's store (everything else real)
  noO       noepi + no O products, no `pm` channel
  noq       no q: the load role skips Q (k read in its place): 16 KB less per chunk
  noqepi    noq + noepi
  dstore    O stored from registers to global (no staging), in the chunk
  dstore2   O stored from registers to global a chunk later (op)
  dstore3   dstore2, whole heads too
  chain128  chain with chunks of 128 tokens at BV = 64 (C = 128; `inp` two slots, `am`
            one, to fit 228 KB): the recurrence's time with half the steps.
            Valid only where the host does not split (it plans in chunks of
            64): 16/64 1x32768, say. 200 KB of shared memory, 44 spill bytes
            with h0 and the final state (none without); not yet timed
  orole     P and O in a role of their own (`out`, replacing paux): math puts
            Sᵀ and V_newᵀ through a channel `sm` (a correct kernel)
The edits are string replacements checked to match once: a changed kernel
makes this script fail rather than write a wrong variant."""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kernels", "gdn", "gdn_fwd_fused.qla")


def rep(s, a, b):
    if s.count(a) != 1:
        sys.exit(f"gdn_fused_variants.py: pattern found {s.count(a)} times (the kernel changed?):\n{a}")
    return s.replace(a, b)


INV = "frag a: f32[C, C] = inv_unit_lower(l, operands = f16)"
KK = """          frag l: f32[C, C]
          l = gemm(ks, ks^T)
          for (i, jj) in parallel(C, C) {
            l[i, jj] = i > jj ? beta[i] * l[i, jj] * rk[i] * rk_c[jj] * fast_exp2(gam[i] - gam_c[jj]) : 0.0
          }
"""
PQ = """        frag qk: f32[C, C]
        qk = gemm(qs, ks^T)
        for (i, jj) in parallel(C, C) {
          qk[i, jj] = i >= jj ? qk[i, jj] * (scale * fast_exp2(gam[i] - gam_c[jj]) * rq[i] * rk_c[jj]) : 0.0
        }
        frag eo: f32[C]
        for (i) in parallel(C) { eo[i] = scale * fast_exp2(gam[i]) * rq[i] }
        put pm -> (ps, eqs) {"""
O1 = """          if BV == 64 {
            o = gemm(sb, qs^T)
          }"""
O2 = """            for (i, jj) in parallel(BV, C) { o[i, jj] = o[i, jj] * eo[jj] }
            o += gemm(vnb, ps^T)"""
E1 = """        } else {
          copy op^T -> os
          copy os -> O[b, tp :+ C until te, hv, v0 :+ BV]
        }"""
E2 = """    if BV == 64 {
      copy op^T -> os
      copy os -> O[b, tp :+ C until te, hv, v0 :+ BV]
    }"""
PM_DECL = "  channel pm: { p: DT[C, C], eo: f32[C] } depth(3)\n"
PM_PUT = """        put pm -> (ps, eqs) {
          copy qk -> ps
          copy eo -> eqs
        }
"""
PW0 = re.compile(r"\n( *)if PW == 0 \{\n.*?\n\1\}\n", re.S)  # (also math's PW = 0 update: 64-wide slices only)


def no_pm(s, get_old, get_new):
    s = rep(rep(s, PM_DECL, ""), PM_PUT, "")
    s = PW0.sub("\n", s)
    return rep(s, get_old, get_new)


def no_q(s):
    s = rep(s, "channel inp: { q: DT[C, DK], k: DT[C, DK],", "channel inp: { k: DT[C, DK],")
    s = s.replace("(qs, ks, gs, bs, vs)", "(ks, gs, bs, vs)")
    s = rep(s, "        copy Q[b, t0 :+ C, hk, 0 :+ DK] -> qs\n", "")
    return re.sub(r"\bqs\b", "ks", s)


def variants(k):
    v = {}
    v["noinv"] = rep(k, INV, "frag a: f32[C, C]\n          for (i, jj) in parallel(C, C) { a[i, jj] = l[i, jj] }")
    v["noaux"] = rep(rep(k, KK, ""), INV, "frag a: f32[C, C]\n          for (i, jj) in parallel(C, C) { a[i, jj] = i == jj ? 1.0 : 0.0 }")
    v["mathonly"] = rep(v["noaux"], PQ, """        frag qk: f32[C, C]
        for (i, jj) in parallel(C, C) { qk[i, jj] = 0.0 }
        frag eo: f32[C]
        for (i) in parallel(C) { eo[i] = scale * fast_exp2(gam[i]) * rq[i] }
        put pm -> (ps, eqs) {""")
    v["rec"] = rep(rep(v["mathonly"], O1, "          if BV == 64 {\n            o = 0\n          }"), O2,
                   "            for (i, jj) in parallel(BV, C) { o[i, jj] = eo[jj] }")
    v["rec2"] = rep(rep(v["rec"], E1, "        }"), E2, "")
    v["rec3"] = no_pm(v["rec2"], """          get pm -> (ps, eqs) {
            frag eo: f32[C]
            copy eqs -> eo
            for (i, jj) in parallel(BV, C) { o[i, jj] = eo[jj] }
""", """          if true {
            frag eo: f32[C] = 1.0
            for (i, jj) in parallel(BV, C) { o[i, jj] = eo[jj] }
""")
    v["chain"] = rep(rep(v["rec3"], "          for (i, jj) in parallel(BV, DK) { st[i, jj] = st[i, jj] * egl }\n", ""),
                     "          for (i, jj) in parallel(BV, C) { x[i, jj] = t0 + jj < eos ? x[i, jj] : 0.0 }\n", "")
    c = rep(v["chain"], "BV = DV, C = 64,", "BV = DV, C = (BV == 64 ? 128 : 64),").replace("depth(3)", "depth(2)")
    v["chain128"] = rep(c, "channel am: { t: DT[C, C], ew: f32[C], ed: f32[C] } depth(2)",
                        "channel am: { t: DT[C, C], ew: f32[C], ed: f32[C] } depth(1)")
    v["noepi"] = rep(rep(k, E1, "        }"), E2, "")
    v["noO"] = no_pm(rep(v["noepi"], O1, ""), """          get pm -> (ps, eqs) {
            frag eo: f32[C]
            copy eqs -> eo
""" + O2 + "\n", "          if true {\n")
    v["noq"] = no_q(k)
    v["noqepi"] = no_q(v["noepi"])
    d = rep(k, """            if BV == 64 {
              op = cast(o)
            } else {""", """            if BV == 64 {
              copy o^T -> O[b, t0 :+ C until eos, hv, v0 :+ BV]
            } else {""")
    v["dstore"] = rep(rep(d, E1, "        }"), E2, "")
    v["dstore2"] = rep(rep(k, E1, """        } else {
          copy op^T -> O[b, tp :+ C until te, hv, v0 :+ BV]
        }"""), E2, """    if BV == 64 {
      copy op^T -> O[b, tp :+ C until te, hv, v0 :+ BV]
    }""")
    v["dstore3"] = rep(v["dstore2"], """              copy o^T -> os
              copy os -> O[b, t0 :+ C until eos, hv, v0 :+ BV]""", """              copy o^T -> O[b, t0 :+ C until eos, hv, v0 :+ BV]""")
    v["orole"] = orole(k)
    return v


def orole(s):
    start = s.index("  // With 64-wide slices (PW = 1) P has a role of its own")
    end = s.index("  role aux:")
    s = s[:start] + '''  role out: warpgroups 1 .. PW, regs 120 {
    shared os: DT[C, BV]
    for c in cbeg .. cend {
      let t0 = bos + c * C
      get inp -> (qs, ks, gs, bs, vs) {
        frag gam: f32[C]
        copy gs -> gam
        frag gam_c: f32[C]
        copy gs -> gam_c
        frag qk: f32[C, C]
        qk = gemm(qs, ks^T)
        for (i, jj) in parallel(C, C) { qk[i, jj] = i >= jj ? qk[i, jj] * (scale * fast_exp2(gam[i] - gam_c[jj])) : 0.0 }
        frag pb: DT[C, C] = cast(qk)
        frag eo: f32[C]
        for (i) in parallel(C) { eo[i] = scale * fast_exp2(gam[i]) }
        get sm -> (sbs, vns) {
          frag o: f32[C, BV]
          o = gemm(qs, sbs^T)
          for (i, jj) in parallel(C, BV) { o[i, jj] = o[i, jj] * eo[i] }
          o += gemm(pb, vns^T)
          copy o -> os
          copy os -> O[b, t0 :+ C until eos, hv, v0 :+ BV]
        }
      }
    }
  }

''' + s[end:]
    am = "  channel am: { t: DT[C, C], ew: f32[C], ed: f32[C] } depth(2)\n"
    s = rep(s, am, am + "  channel sm: { s: DT[BV, DK], vn: DT[BV, C] } depth(2)\n")
    s = rep(s, """        if BV > 64 {
          o = gemm(sb, qs^T)
        } else {""", """        if BV > 64 {
          o = gemm(sb, qs^T)
        } else if PW == 0 {""")
    s = rep(s, O1, O1.replace("if BV == 64 {", "if BV == 64 && PW == 0 {"))
    s = rep(s, """          if PW == 0 {
            st += gemm(vdb, ks)
          }
          // P only now: the recurrence above does not wait for it. With
          // P's own role the state's update is issued beside O's product.
          get pm -> (ps, eqs) {""", """          st += gemm(vdb, ks)
          if PW == 1 {
            put sm -> (ss, vns) {
              copy sb -> ss
              copy vnb -> vns
            }
          } else {
          get pm -> (ps, eqs) {""")
    s = rep(s, """            if PW == 1 {
              st += gemm(vdb, ks)
            }
""", "")
    s = rep(s, """              copy os -> O[b, t0 :+ C until eos, hv, v0 :+ BV]
            }
          }
        }
      }
      tp = t0""", """              copy os -> O[b, t0 :+ C until eos, hv, v0 :+ BV]
            }
          }
          }
        }
      }
      tp = t0""")
    s = rep(s, E2, E2.replace("if BV == 64 {", "if BV == 64 && PW == 0 {"))
    return s.replace("role math: warpgroups 2 + PW .. MWG, regs (BV == 64 ? 232 :",
                     "role math: warpgroups 2 + PW .. MWG, regs (PW == 1 ? 208 : BV == 64 ? 232 :")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, names = sys.argv[1], sys.argv[2:]
    v = variants(open(SRC).read())
    for n in names:
        if n not in v:
            sys.exit(f"gdn_fused_variants.py: unknown variant '{n}' ({', '.join(v)})")
        os.makedirs(os.path.join(out, n), exist_ok=True)
        with open(os.path.join(out, n, "gdn_fwd_fused.qla"), "w") as f:
            f.write(v[n])
        print(os.path.join(out, n, "gdn_fwd_fused.qla"))


if __name__ == "__main__":
    main()
