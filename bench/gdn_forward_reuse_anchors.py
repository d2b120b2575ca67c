"""QLA's GDN forward times from one bench/gdn_forward.py run (QLA alone) set against the FlashQLA and
FlashInfer times of an earlier side-by-side run on the same rows (same inputs, same timing), when device time
does not allow the anchors again. The ratios are estimates: the anchors were not measured in the same process.

    python3 bench/gdn_forward_reuse_anchors.py NEW.json ANCHOR_RUN.json OUT.md

NEW.json: gdn_forward.py --no-fla output (ours_ms per row); ANCHOR_RUN.json: a gdn_forward.py run with
--flashqla --flashinfer (their ms per row, and its own ours_ms, shown for comparison).
"""
import json
import math
import sys

newf, oldf, out_md = sys.argv[1], sys.argv[2], sys.argv[3]
new = {(r['hqk'],r['hv'],r['layout']):r for r in json.load(open(newf))['rows']}
oldj = json.load(open(oldf))
old = {(r['hqk'],r['hv'],r['layout']):r for r in oldj['rows']}
g = lambda xs: math.exp(sum(math.log(x) for x in xs)/len(xs))
rows=[]
for k, o in old.items():
    n = new[k]
    fq, fi = o.get('flashqla_ms'), o.get('flashinfer_ms')
    best = min(fq, fi); who = 'FlashQLA' if fq <= fi else 'FlashInfer'
    rows.append(dict(k=k, model=o['model'], s7=o['ours_ms'], s8=n['ours_ms'], fq=fq, fi=fi, best=best, who=who,
                     r7=o['ours_ms']/best, r8=n['ours_ms']/best))
L=[]
L.append("| model | Hqk/Hv | sequences | QLA ms (new, alone) | QLA ms (anchor run) | FlashQLA ms (anchor run) | FlashInfer ms (anchor run) | new/best | anchor run/best |")
L.append("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    L.append(f"| {r['model']} | {r['k'][0]}/{r['k'][1]} | {r['k'][2]} | {r['s8']:.3f} | {r['s7']:.3f} | {r['fq']:.3f} | {r['fi']:.3f} | {r['r8']:.2f}× ({r['who']}) | {r['r7']:.2f}× |")
summ = []
summ.append(f"Rows: {len(rows)}. QLA / min(FlashQLA, FlashInfer): geometric mean **{g([r['r8'] for r in rows]):.3f}×** (QLA of the anchor run {g([r['r7'] for r in rows]):.3f}×); worst {max(r['r8'] for r in rows):.2f}× ({max(rows, key=lambda r: r['r8'])['k']}); ahead on {sum(r['r8'] < 1 for r in rows)} rows ({sum(r['r7'] < 1 for r in rows)}); over 1.25× on {sum(r['r8'] > 1.25 for r in rows)} rows ({sum(r['r7'] > 1.25 for r in rows)}); QLA new/anchor run geometric mean {g([r['s8']/r['s7'] for r in rows]):.3f}.")
by = {}
for r in rows: by.setdefault(r['k'][:2], []).append(r)
summ.append("")
summ.append("| Hqk/Hv | " + " | ".join(f"{a}/{b}" for a, b in by) + " |")
summ.append("|---|" + "---|" * len(by))
summ.append("| geomean | " + " | ".join(f"{g([r['r8'] for r in v]):.2f}" for v in by.values()) + " |")
summ.append("| worst | " + " | ".join(f"{max(r['r8'] for r in v):.2f}" for v in by.values()) + " |")
lay = {}
for r in rows: lay.setdefault(r['k'][2], []).append(r)
summ.append("")
summ.append("By layout (geomean new/best): " + ", ".join(f"{l} {g([r['r8'] for r in v]):.2f}" for l, v in lay.items()))
head = [f"# GDN forward: QLA ({newf}) against the anchors of {oldf}", "",
        f"QLA: {json.load(open(newf)).get('meta', {}).get('gpu', '?')}, {json.load(open(newf)).get('meta', {}).get('date', '?')}, `{json.load(open(newf)).get('meta', {}).get('command', '?')}`; anchors as measured in the earlier run "
        "(FlashQLA, FlashInfer: same inputs, same GPU kind, another process). Estimates, not a side-by-side run.", ""]
open(out_md, 'w').write("\n".join(head + summ) + "\n\n" + "\n".join(L) + "\n")
print("\n".join(summ))
