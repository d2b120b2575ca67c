"""GDN chunked-prefill forward: QLA (qla.chunk_gated_delta_rule) against FLA's
Triton chunk_gated_delta_rule, side by side in one process, on the forward rows
of FlashQLA's published H200 table (K = V = 128, bf16).

Timing: per row and per implementation, 3 warm-up calls, then `--calls` calls
captured in one CUDA graph, replayed `--replays` times; the time of a call is
the median replay time / calls (falls back to CUDA-event timing of eager calls,
marked in the output, if capture fails). Both implementations get the same
input tensors: q, k = F.normalize(randn) bf16, v = randn bf16,
g = logsigmoid(randn) f32, beta = sigmoid(randn) (--beta-dtype), scale K^-0.5,
output_final_state=True, no initial state (--h0 adds one). Single-sequence rows
(1xT) are B = 1 without cu_seqlens; multi-sequence rows are packed (B = 1) with
int64 cu_seqlens.

    # FLA's source folder on PYTHONPATH; FLA_FLASH_QLA=0 FLA_TILELANG=0 are set here before fla is imported
    PYTHONPATH=python:/path/to/fla_src QLA_LIBRARY=build/compiler/libqla.so \\
        python3 bench/gdn_forward.py --anchors shared/anchors/flashqla_published_h200.txt [--check]
    python3 bench/gdn_forward.py --list-rows        # parse the anchors only (no torch needed)
    python3 bench/gdn_forward.py --warm-only        # compile / autotune every selected row once
    ... --flashqla --flashinfer                     # also time FlashQLA and FlashInfer (measured columns;
                                                    # their packages on PYTHONPATH: scripts/anchor_carry.sh)

With --flashqla / --flashinfer the anchors are timed the same way, on the same
tensors, each through bench/anchors.py's adapter (their layouts and gates
converted once outside the timed call; see there). The acceptance metric of
the fused forward is then per row QLA_ms / min(FlashQLA_ms, FlashInfer_ms)
("ours/best"), its geometric mean and its worst row.

Writes gdn_forward_<date>.json and .md in bench/results/ (suffix _partial when rows
are filtered) and prints the markdown table.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ANCHORS = os.path.normpath(os.path.join(ROOT, "..", "shared", "anchors", "flashqla_published_h200.txt"))
K_DIM = V_DIM = 128

# ----------------------------------------------------------------------------
# anchors: FlashQLA's published table (plain text; no torch needed)
# ----------------------------------------------------------------------------

_FWD_ROW = re.compile(
    r"^(?P<model>\S.*?)\s{2,}(?P<layout>\d+(?:x\d+|(?:\+\d+)+))\s+(?P<hqk>\d+)\s+(?P<hv>\d+)\s+"
    r"(?P<fq>[\d.]+)ms\s+(?P<fi>[\d.]+)ms\s+(?P<fla>[\d.]+)ms\s+(?P<vsfla>[\d.]+)x\s+(?P<vsfi>[\d.]+)x\s*$")


def parse_layout(layout):
    """'1x32768' -> [32768]; '8192x4' -> [8192] * 4; '28672+4096' -> [28672, 4096].
    In 'AxB' the smaller number is the count of sequences, the larger their length."""
    if "+" in layout:
        return [int(x) for x in layout.split("+")]
    a, b = (int(x) for x in layout.split("x"))
    count, length = min(a, b), max(a, b)
    return [length] * count


def parse_anchors(path):
    """Forward rows of FlashQLA's published table, in file order. Each row:
    model, layout, seqlens, tokens, hqk, hv, and the published times (ms) and
    speedups: flashqla_ms, flashinfer_ms, fla_ms, flashqla_vs_fla,
    flashqla_vs_flashinfer, flashinfer_vs_fla (= fla_ms / flashinfer_ms)."""
    rows, in_fwd = [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.rstrip("\n")
            if s.startswith(">>>"):
                in_fwd = "FORWARD" in s.upper()
                continue
            if not in_fwd:
                continue
            m = _FWD_ROW.match(s.strip())
            if not m:
                continue
            seqlens = parse_layout(m["layout"])
            fq, fi, fla = float(m["fq"]), float(m["fi"]), float(m["fla"])
            rows.append(dict(
                model=m["model"].strip(), layout=m["layout"], seqlens=seqlens, tokens=sum(seqlens),
                hqk=int(m["hqk"]), hv=int(m["hv"]),
                flashqla_ms=fq, flashinfer_ms=fi, fla_ms=fla,
                flashqla_vs_fla=float(m["vsfla"]), flashqla_vs_flashinfer=float(m["vsfi"]),
                flashinfer_vs_fla=fla / fi))
    return rows


def read_anchor_header(path):
    """The lines before the first '>>>' (GPU, library versions, timing config)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith(">>>"):
                break
            if line.strip() and not set(line.strip()) <= set("=-"):
                out.append(line.rstrip())
    return out


def select_rows(rows, args):
    sel = rows
    if args.heads:
        want = {tuple(int(x) for x in h.split("/")) for h in args.heads.split(",")}
        sel = [r for r in sel if (r["hqk"], r["hv"]) in want]
    if args.layouts:
        want = set(args.layouts.split(","))
        sel = [r for r in sel if r["layout"] in want]
    if args.rows is not None:
        sel = sel[:args.rows]
    return sel


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def config_name(r):
    return f"{r['hqk']}/{r['hv']} {r['layout']}"


def list_rows(rows, path):
    print(f"{len(rows)} forward rows parsed from {path}")
    print(f"{'#':>3s}  {'model':16s} {'Hqk/Hv':>7s} {'layout':12s} {'seqs':>4s} {'tokens':>6s}  "
          f"{'FlashQLA':>8s} {'FlashInfer':>10s} {'FLA':>7s}  {'FQ/FLA':>6s} {'FI/FLA':>6s} {'FQ/FI':>6s}   (published, ms)")
    for i, r in enumerate(rows):
        print(f"{i:3d}  {r['model']:16s} {str(r['hqk']) + '/' + str(r['hv']):>7s} {r['layout']:12s} "
              f"{len(r['seqlens']):4d} {r['tokens']:6d}  {r['flashqla_ms']:8.3f} {r['flashinfer_ms']:10.3f} "
              f"{r['fla_ms']:7.3f}  {r['flashqla_vs_fla']:5.2f}x {r['flashinfer_vs_fla']:5.2f}x "
              f"{r['flashqla_vs_flashinfer']:5.2f}x")
    print(f"published geomeans over these rows: FlashQLA/FLA {geomean([r['flashqla_vs_fla'] for r in rows]):.2f}x, "
          f"FlashInfer/FLA {geomean([r['flashinfer_vs_fla'] for r in rows]):.2f}x")


# ----------------------------------------------------------------------------
# GPU part (torch imported only here)
# ----------------------------------------------------------------------------

def setup_fla_env(warm_only=False):
    """FLA must not dispatch to its FlashQLA / TileLang backends: we time its
    own Triton kernels, as the anchors did. Set before fla is imported. A
    warm-up process (run in parallel with others) must not leave its autotune
    choices on disk for the timed process: FLA_CACHE_RESULTS=0 there."""
    if warm_only:
        os.environ["FLA_CACHE_RESULTS"] = "0"
    os.environ["FLA_FLASH_QLA"] = "0"
    os.environ["FLA_TILELANG"] = "0"
    os.environ.setdefault("FLA_INTRACARD_CP", "0")  # as in our FLA anchor run of 2026-11-29
    os.environ["QLA_FLA_BACKEND"] = "0"  # never let FLA's dispatch route to QLA (qla.fla) in the FLA column
    return {k: os.environ.get(k) for k in ("FLA_FLASH_QLA", "FLA_TILELANG", "FLA_INTRACARD_CP", "FLA_CACHE_RESULTS",
                                           "QLA_FLA_BACKEND")}


def import_anchors(args):
    """[(name, AnchorLib)] for the anchors asked for that import; the others
    print a SKIP line with the reason and are recorded in info."""
    import anchors
    libs, info = [], {}
    for flag, imp in (("flashqla", anchors.import_flashqla), ("flashinfer", anchors.import_flashinfer)):
        if not getattr(args, flag):
            continue
        lib, why = imp()
        if lib is None:
            info[flag] = dict(skipped=why)
        else:
            info[flag] = lib.info()
            libs.append((flag, lib))
    return libs, info


def import_impls(args):
    ours = fla = None
    info = {}
    if not args.no_ours:
        try:
            import qla
        except ImportError:
            sys.path.insert(0, os.path.join(ROOT, "python"))
            import qla
        ours = qla.chunk_gated_delta_rule
        info["qla_module"] = os.path.dirname(qla.__file__)
    if not args.no_fla:
        info["fla_env"] = setup_fla_env(args.warm_only)
        import fla as fla_pkg
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla
        info["fla_version"] = getattr(fla_pkg, "__version__", "?")
        info["fla_path"] = os.path.dirname(os.path.abspath(fla_pkg.__file__))
        info["fla_commit"] = None
        try:
            # Only FLA's own checkout: a copy of its fla/ inside another git
            # tree (e.g. .fla/ in this repository) would report that tree's commit.
            run = lambda *a: subprocess.run(["git", "-C", info["fla_path"], *a], capture_output=True, text=True,
                                            timeout=10).stdout.strip()
            if run("rev-parse", "--show-toplevel") == os.path.dirname(info["fla_path"]):
                info["fla_commit"] = run("rev-parse", "HEAD") or None
        except Exception:  # noqa: BLE001
            pass
    return ours, fla, info


def make_inputs(torch, F, r, args, seed):
    dev = "cuda"
    gen = torch.Generator(device=dev).manual_seed(seed)
    T = r["tokens"]
    Hqk, Hv = r["hqk"], r["hv"]
    bf = torch.bfloat16

    def randn(*shape):
        return torch.randn(*shape, device=dev, dtype=torch.float32, generator=gen)

    fq = getattr(args, "inputs", "fla") == "flashqla"
    q = F.normalize(randn(1, T, Hqk, K_DIM), p=2, dim=-1).to(bf)
    k = F.normalize(randn(1, T, Hqk, K_DIM), p=2, dim=-1).to(bf)
    v = randn(1, T, Hv, V_DIM).to(bf)
    g = F.logsigmoid(randn(1, T, Hv))
    if fq:
        # FlashQLA's benchmark (bench_gated_delta_rule.py): g / 16, and a
        # quarter of the heads (a random choice, here seeded) with g = 0.
        g = g / 16
        keep = torch.zeros(Hv, dtype=torch.bool, device=dev)
        keep[: math.ceil(0.75 * Hv)] = True
        keep = keep[torch.randperm(Hv, generator=gen, device=dev)]
        g[:, :, ~keep] = 0.0
    beta = torch.sigmoid(randn(1, T, Hv)).to(torch.float32 if (fq or args.beta_dtype == "f32") else bf)
    cu = None
    if len(r["seqlens"]) > 1 or fq:
        offs = [0]
        for L in r["seqlens"]:
            offs.append(offs[-1] + L)
        cu = torch.tensor(offs, dtype=torch.int32 if fq else torch.int64, device=dev)
    N = len(r["seqlens"])
    h0 = randn(N, Hv, K_DIM, V_DIM) if (args.h0 or fq) else None
    return dict(q=q, k=k, v=v, g=g, beta=beta, cu_seqlens=cu, initial_state=h0)


def make_call(fn, inp, expand_qk_to=None):
    q, k = inp["q"], inp["k"]
    if expand_qk_to:  # only if FLA refuses GVA: repeat q/k heads (outside the timed region)
        rep = expand_qk_to // q.shape[2]
        q, k = q.repeat_interleave(rep, dim=2), k.repeat_interleave(rep, dim=2)

    def call():
        return fn(q, k, inp["v"], inp["g"], inp["beta"], scale=None, initial_state=inp["initial_state"],
                  output_final_state=True, cu_seqlens=inp["cu_seqlens"])
    return call


def fla_call_for(torch, fla, inp, r):
    """(call, expand_to, note): FLA's call on the row's inputs, run once. FLA
    0.5.x handles Hqk < Hv itself; should it refuse, q/k are repeated to Hv
    heads (outside the timed region) and the row says so."""
    call = make_call(fla, inp)
    try:
        call()
        torch.cuda.synchronize()
        return call, None, None
    except Exception as e:  # noqa: BLE001
        if r["hqk"] == r["hv"]:
            raise
        note = (f"FLA refused Hqk != Hv ({type(e).__name__}: {str(e).strip()[:100]}); "
                "timed FLA with q/k repeated to Hv heads")
        call = make_call(fla, inp, expand_qk_to=r["hv"])
        call()
        torch.cuda.synchronize()
        return call, r["hv"], note


def anchor_kw(name, args):
    """Adapter options: FlashInfer gets the longest sequence as its max_seqlen
    hint unless --flashinfer-no-max-seqlen."""
    return dict(max_seqlen_hint=not args.flashinfer_no_max_seqlen) if name == "flashinfer" else {}


def time_graph(torch, fn, calls, replays):
    """Median ms per call over `replays` replays of a graph of `calls` calls."""
    from timing import time_graph as _time_graph
    return _time_graph(fn, calls=calls, replays=replays)


def time_eager(torch, fn, calls, replays):
    """Median ms per call over `replays` event-timed runs of `calls` eager calls."""
    from timing import time_eager as _time_eager
    return _time_eager(fn, calls=calls, reps=replays, warmup=3)


def measure(torch, fn, args):
    """(ms, method, all per-call times, error)"""
    try:
        ms, ts = time_graph(torch, fn, args.calls, args.replays)
        return ms, "graph", ts, None
    except Exception as e:  # noqa: BLE001
        graph_err = f"{type(e).__name__}: {str(e).strip()[:200]}"
        torch.cuda.synchronize()
    try:
        ms, ts = time_eager(torch, fn, args.calls, args.replays)
        return ms, "eager (graph capture failed: " + graph_err + ")", ts, None
    except Exception as e:  # noqa: BLE001
        return None, None, [], f"{type(e).__name__}: {str(e).strip()[:300]}"


def rms_rel(out, ref):
    d = out.double() - ref.double()
    return (d.pow(2).mean().sqrt() / ref.double().pow(2).mean().sqrt()).item()


def json_safe(x):
    """NaN/inf -> null, recursively (json.dump would write invalid NaN tokens)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def fmt(x, spec):
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def times(x, spec=".2f"):
    """'1.23×', or '—' if there is no value."""
    s = fmt(x, spec)
    return s if s == "—" else s + "×"


ANCHOR_NAMES = ("flashqla", "flashinfer")
ANCHOR_LABELS = {"flashqla": "FlashQLA", "flashinfer": "FlashInfer"}


def measured_anchors(rows):
    """The anchors that have a measured time in some row, in a fixed order."""
    return [n for n in ANCHOR_NAMES if any(r.get(n + "_ms") for r in rows)]


def write_markdown(res, check):
    m = res["meta"]
    anc = measured_anchors(res["rows"])
    lines = [f"# GDN forward: QLA vs FLA (Triton){''.join(', ' + ANCHOR_LABELS[n] for n in anc)}, "
             f"{m['gpu']}, {m['date']}", "",
             f"Command: `{m['command']}`", "",
             f"torch {m['torch']}, triton {m.get('triton')}, FLA {m.get('fla_version')} "
             f"({m.get('fla_commit') or 'commit unknown'}); FLA env {m.get('fla_env')}. "
             f"K = V = 128, bf16 q/k/v, f32 g, {m['inputs']['beta']} beta, output_final_state=True"
             f"{', initial state' if m['inputs']['h0'] else ''}. Timing: {m['timing']}.", "",
             "FlashQLA/FLA and FlashInfer/FLA are the published speedups over FLA of FlashQLA's H200 table "
             "(FLA 0.5.1, torch 2.9.1), not measured here. \"ahead\": our FLA/ours above both.", ""]
    if anc:
        lines += [" ".join(
            f"{ANCHOR_LABELS[n]} ms is measured here, in the same process on the same tensors "
            f"({(m.get('anchor_libs') or {}).get(n, {}).get('version', '?')}; {(m.get('anchor_conversions') or {}).get(n, '')})."
            for n in anc) + " \"ours/best\": ours ms / min(measured anchors' ms) (below 1: QLA faster).", ""]
    head = ["model", "Hqk/Hv", "sequences", "ours ms", "FLA ms", "FLA/ours", "FlashQLA/FLA (pub.)",
            "FlashInfer/FLA (pub.)", "FlashQLA/FlashInfer (pub.)", "ahead"]
    for n in anc:
        head += [f"{ANCHOR_LABELS[n]} ms", f"FLA/{ANCHOR_LABELS[n]}"]
    if anc:
        head.append("ours/best")
    if check:
        head.append("o vs FLA (rms rel)")
        head += [f"{ANCHOR_LABELS[n]} o vs FLA" for n in anc]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in res["rows"]:
        cells = [r["model"], f"{r['hqk']}/{r['hv']}", r["layout"], fmt(r["ours_ms"], ".3f"), fmt(r["fla_ms"], ".3f"),
                 fmt(r["ratio"], ".2f") + ("×" if r["ratio"] else ""), f"{r['published']['flashqla_vs_fla']:.2f}×",
                 f"{r['published']['flashinfer_vs_fla']:.2f}×", f"{r['published']['flashqla_vs_flashinfer']:.2f}×",
                 "—" if r["ahead_of_both"] is None else ("yes" if r["ahead_of_both"] else "**no**")]
        for n in anc:
            cells += [fmt(r.get(n + "_ms"), ".3f"), fmt(r.get("fla_over_" + n), ".2f") + ("×" if r.get("fla_over_" + n) else "")]
        if anc:
            cells.append(fmt(r.get("ours_over_best_anchor"), ".2f") + ("×" if r.get("ours_over_best_anchor") else "")
                         + (f" ({ANCHOR_LABELS[r['best_anchor']]})" if r.get("best_anchor") and len(anc) > 1 else ""))
        if check:
            cells.append(fmt((r.get("check") or {}).get("o_rms_rel"), ".1e"))
            cells += [fmt((r.get("check") or {}).get(n + "_o_rms_rel"), ".1e") for n in anc]
        if r.get("errors") or r.get("notes"):
            cells[-1] += " (" + "; ".join(r["errors"] + r["notes"]).replace("|", "/")[:160] + ")"
        lines.append("| " + " | ".join(cells) + " |")
    gm = res["geomean"]
    lines += ["", f"Geometric mean over {gm['rows']} rows: FLA/ours **{fmt(gm['fla_over_ours'], '.2f')}×** "
              f"(published on the same rows: FlashQLA/FLA {fmt(gm['flashqla_vs_fla_published'], '.2f')}×, "
              f"FlashInfer/FLA {fmt(gm['flashinfer_vs_fla_published'], '.2f')}×); "
              f"ahead of both on {gm['rows_ahead_of_both']} of {gm['rows']} rows; "
              f"min FLA/ours {fmt(gm['min_fla_over_ours'], '.2f')}×.", ""]
    if anc:
        lines += [
            "Measured anchors: " + ", ".join(
                f"FLA/{ANCHOR_LABELS[n]} {times(gm.get('fla_over_' + n))} over {gm.get(n + '_rows')} rows"
                for n in anc) + ". "
            f"**QLA / min({', '.join(ANCHOR_LABELS[n] for n in anc)}): geometric mean "
            f"{times(gm.get('ours_over_best_anchor'), '.3f')}, worst {times(gm.get('ours_over_best_anchor_worst'), '.3f')} "
            f"({gm.get('ours_over_best_anchor_worst_row') or '—'})** over {gm.get('best_anchor_rows')} rows "
            f"(below 1: QLA faster); QLA faster than the better anchor on {gm.get('rows_faster_than_best_anchor')} "
            f"of them; the better anchor: "
            + ", ".join(f"{ANCHOR_LABELS[n]} on {c}" for n, c in (gm.get("best_anchor_counts") or {}).items())
            + (f". {gm['best_anchor_partial_rows']} rows had only one anchor measured."
               if gm.get("best_anchor_partial_rows") else "."), ""]
    return "\n".join(lines)


def summarize(rows):
    """The geometric means of a result's rows."""
    measured = [x for x in rows if x["ratio"]]
    out = dict(rows=len(measured),
               fla_over_ours=geomean([x["ratio"] for x in measured]),
               min_fla_over_ours=min((x["ratio"] for x in measured), default=float("nan")),
               flashqla_vs_fla_published=geomean([x["published"]["flashqla_vs_fla"] for x in measured]),
               flashinfer_vs_fla_published=geomean([x["published"]["flashinfer_vs_fla"] for x in measured]),
               rows_ahead_of_both=sum(1 for x in measured if x["ahead_of_both"]))
    anc = measured_anchors(rows)
    if anc:
        # measured anchors: FLA over each, and the acceptance metric QLA / min(anchors)
        for n in anc:
            xs = [x["fla_over_" + n] for x in rows if x.get("fla_over_" + n)]
            out[n + "_rows"] = len([x for x in rows if x.get(n + "_ms")])
            out["fla_over_" + n] = geomean(xs)
        best = [x for x in rows if x.get("ours_over_best_anchor")]
        worst = max(best, key=lambda x: x["ours_over_best_anchor"], default=None)
        counts = {}
        for x in best:
            counts[x["best_anchor"]] = counts.get(x["best_anchor"], 0) + 1
        out.update(best_anchor_rows=len(best),
                   ours_over_best_anchor=geomean([x["ours_over_best_anchor"] for x in best]),
                   ours_over_best_anchor_worst=worst["ours_over_best_anchor"] if worst else float("nan"),
                   ours_over_best_anchor_worst_row=(f"{worst['model']} {worst['hqk']}/{worst['hv']} {worst['layout']}"
                                                    if worst else None),
                   rows_faster_than_best_anchor=sum(1 for x in best if x["ours_over_best_anchor"] < 1),
                   best_anchor_counts=counts,
                   best_anchor_partial_rows=sum(1 for x in best if len(x.get("best_anchor_of") or []) < len(anc)))
    return out


def merge_results(paths, anchors, out_dir):
    """One result from partial runs (e.g. head configurations timed in separate
    processes or calls): rows in the anchors' order, geometric means redone."""
    parts = [json.load(open(p)) for p in paths]
    order = {(r["model"], r["layout"], r["hqk"], r["hv"]): i for i, r in enumerate(parse_anchors(anchors))}
    rows = sorted((r for p in parts for r in p["rows"]), key=lambda r: order.get((r["model"], r["layout"], r["hqk"], r["hv"]), 1 << 30))
    meta = dict(parts[0]["meta"])
    meta["command"] = " + ".join(p["meta"]["command"] for p in parts) + "; merged by --merge"
    res = dict(meta=meta, rows=rows, geomean=summarize(rows))
    check = any(r.get("check") for r in rows)
    md = write_markdown(res, check)
    partial = len(rows) != len(order)
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, f"gdn_forward_{meta['date']}{'_partial' if partial else ''}")
    with open(base + ".json", "w") as f:
        json.dump(json_safe(res), f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md)
    print(md)
    print(f"wrote {base}.json and {base}.md")
    return 0


ANCHOR_CONVERSIONS = {
    "flashqla": "flash_qla.chunk_gated_delta_rule on the same tensors (FLA layout, log gate, native GVA); "
                "converted once outside timing: cu_seqlens -> int32 ([0, T] for 1xT rows), beta -> f32",
    "flashinfer": "flashinfer.gdn_prefill.chunk_gated_delta_rule; converted once outside timing: q/k/v packed "
                  "[T, H, D] (views), alpha = exp(g) f32, beta f32, h0 transposed to [N, H, V, K], int32 "
                  "cu_seqlens ([0, T] for 1xT rows), output and output_state preallocated, max_seqlen = longest "
                  "sequence (unless --flashinfer-no-max-seqlen); o / state brought back to FLA's layout for "
                  "--check only",
}


def run_gpu(rows, args):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("error: timing needs PyTorch with CUDA (--list-rows only parses the anchors)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("SKIP: no GPU (torch.cuda.is_available() is False)")
        return 0
    ours, fla, info = import_impls(args)
    anchor_libs, info["anchor_libs"] = import_anchors(args)
    import anchors
    if ours is None and fla is None and not anchor_libs:
        print("SKIP: nothing left to run (the anchors asked for do not import)")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    gpu = torch.cuda.get_device_name()
    print(f"{gpu}, torch {torch.__version__}, triton {triton_version}, "
          f"FLA {info.get('fla_version', '-')} {info.get('fla_commit') or ''}, "
          + "".join(f"{anchors.LABELS[n]} {lib.version}, " for n, lib in anchor_libs)
          + f"{len(rows)} rows", flush=True)

    if args.warm_only:
        t_all = time.time()
        for i, r in enumerate(rows):
            inp = make_inputs(torch, F, r, args, args.seed + i)
            for name, fn in (("ours", ours), ("FLA", fla)):
                if fn is None:
                    continue
                t0 = time.time()
                try:
                    call = make_call(fn, inp) if fn is ours else fla_call_for(torch, fla, inp, r)[0]
                    call()
                    call()
                    torch.cuda.synchronize()
                    print(f"  warm {i:3d} {config_name(r):18s} {name:4s} {time.time() - t0:7.1f} s", flush=True)
                except Exception as e:  # noqa: BLE001
                    print(f"  warm {i:3d} {config_name(r):18s} {name:4s} FAILED: {type(e).__name__}: {e}", flush=True)
            for name, lib in anchor_libs:
                t0 = time.time()
                try:
                    prep = anchors.prepare_forward(lib, inp, r["hqk"], r["hv"], **anchor_kw(name, args))
                    prep.call()
                    torch.cuda.synchronize()
                    print(f"  warm {i:3d} {config_name(r):18s} {anchors.LABELS[name]:10s} {time.time() - t0:7.1f} s"
                          + (f"  ({'; '.join(prep.notes)})" if prep.notes else ""), flush=True)
                    del prep
                except Exception as e:  # noqa: BLE001
                    print(f"  warm {i:3d} {config_name(r):18s} {anchors.LABELS[name]:10s} FAILED: "
                          f"{type(e).__name__}: {e}", flush=True)
            del inp
            torch.cuda.empty_cache()
        print(f"warm-up of {len(rows)} rows done in {time.time() - t_all:.0f} s")
        return 0

    def report(final):
        """Builds the result record; writes .json/.md (after every row, so
        that a run cut short keeps what it measured); prints the table at the end."""
        res = dict(
            meta=dict(date=time.strftime("%Y-%m-%d"), gpu=gpu, torch=torch.__version__, triton=triton_version,
                      command="python3 " + " ".join(sys.argv), anchors=os.path.abspath(args.anchors),
                      anchors_header=read_anchor_header(args.anchors), **info,
                      timing=(f"CUDA-graph replay: 3 warm-up calls, {args.calls} calls per graph, median of "
                              f"{args.replays} replays (per-row 'ours_timing'/'fla_timing'/'flashqla_timing'/"
                              f"'flashinfer_timing' say if eager was used)"),
                      inputs=(dict(K=K_DIM, V=V_DIM, qkv="bf16", g="logsigmoid(randn) f32",
                                   beta=f"sigmoid(randn) {args.beta_dtype}", qk="F.normalize(randn), outside timing",
                                   scale="K^-0.5", output_final_state=True, h0=bool(args.h0),
                                   varlen="multi-sequence rows packed, B = 1, int64 cu_seqlens; 1xT rows B = 1 plain",
                                   seed=args.seed) if args.inputs == "fla" else
                              dict(kind="FlashQLA's benchmark", K=K_DIM, V=V_DIM, qkv="bf16",
                                   g="logsigmoid(randn) / 16 f32, a quarter of the heads g = 0",
                                   beta="sigmoid(randn) f32", qk="F.normalize(randn), outside timing", scale="K^-0.5",
                                   output_final_state=True, h0=True,
                                   varlen="B = 1, int32 cu_seqlens for every row (also one sequence)", seed=args.seed)),
                      anchor_conversions=({n: ANCHOR_CONVERSIONS[n] for n, _ in anchor_libs} or None)),
            rows=out_rows,
            geomean=summarize(out_rows))
        md = write_markdown(res, args.check and ours is not None and fla is not None)
        if final:
            print()
            print(md)
        if not args.no_write:
            os.makedirs(args.out_dir, exist_ok=True)
            partial = len(out_rows) != args.total_rows or args.no_ours or args.no_fla
            base = os.path.join(args.out_dir, f"gdn_forward_{res['meta']['date']}{'_partial' if partial else ''}")
            with open(base + ".json", "w") as f:
                json.dump(json_safe(res), f, indent=1)
            with open(base + ".md", "w") as f:
                f.write(md)
            if final:
                print(f"wrote {base}.json and {base}.md")

    out_rows = []
    for i, r in enumerate(rows):
        inp = make_inputs(torch, F, r, args, args.seed + i)
        rec = dict(model=r["model"], hqk=r["hqk"], hv=r["hv"], layout=r["layout"], seqlens=r["seqlens"],
                   tokens=r["tokens"], varlen=len(r["seqlens"]) > 1, ours_ms=None, fla_ms=None, ratio=None,
                   ours_timing=None, fla_timing=None, errors=[], notes=[],
                   published={k: r[k] for k in ("flashqla_ms", "flashinfer_ms", "fla_ms", "flashqla_vs_fla",
                                                "flashqla_vs_flashinfer", "flashinfer_vs_fla")})
        fla_expand = None
        if fla is not None:
            try:
                call, fla_expand, note = fla_call_for(torch, fla, inp, r)
                if note:
                    rec["fla_qk_expanded"] = True
                    rec["notes"].append(note)
                ms, how, ts, err = measure(torch, call, args)
                del call
            except Exception as e:  # noqa: BLE001
                ms, how, ts, err = None, None, [], f"{type(e).__name__}: {str(e).strip()[:300]}"
            rec.update(fla_ms=ms, fla_timing=how, fla_times=ts)
            if err:
                rec["errors"].append("FLA: " + err)
            torch.cuda.empty_cache()
        if ours is not None:
            call = make_call(ours, inp)
            ms, how, ts, err = measure(torch, call, args)
            rec.update(ours_ms=ms, ours_timing=how, ours_times=ts)
            if err:
                rec["errors"].append("ours: " + err)
            del call
            torch.cuda.empty_cache()
        if ours is not None and args.also_two_kernel:
            # The same operator on its two-kernel path (prepare + state),
            # chosen when the call is planned (inside the graph capture).
            saved = os.environ.get("QLA_GDN_FUSED")
            os.environ["QLA_GDN_FUSED"] = "0"
            try:
                call = make_call(ours, inp)
                ms, how, ts, err = measure(torch, call, args)
                rec.update(ours_two_kernel_ms=ms)
                if err:
                    rec["errors"].append("ours (two-kernel): " + err)
                del call
            finally:
                if saved is None:
                    del os.environ["QLA_GDN_FUSED"]
                else:
                    os.environ["QLA_GDN_FUSED"] = saved
            torch.cuda.empty_cache()
        preps = {}
        for name, lib in anchor_libs:
            label = anchors.LABELS[name]
            try:
                prep = anchors.prepare_forward(lib, inp, r["hqk"], r["hv"], **anchor_kw(name, args))
                rec["notes"] += prep.notes
                if prep.expanded:
                    rec[f"{name}_qk_expanded"] = True
                ms, how, ts, err = measure(torch, prep.call, args)
                preps[name] = prep
            except Exception as e:  # noqa: BLE001
                ms, how, ts, err = None, None, [], f"{type(e).__name__}: {str(e).strip()[:300]}"
            rec.update({f"{name}_ms": ms, f"{name}_timing": how, f"{name}_times": ts})
            if err:
                rec["errors"].append(f"{label}: " + err)
            if ms and rec["fla_ms"]:
                rec[f"fla_over_{name}"] = rec["fla_ms"] / ms
            torch.cuda.empty_cache()
        measured = {n: rec.get(f"{n}_ms") for n, _ in anchor_libs if rec.get(f"{n}_ms")}
        if measured:
            best = min(measured, key=measured.get)
            rec.update(best_anchor=best, best_anchor_ms=measured[best], best_anchor_of=sorted(measured))
            if rec["ours_ms"]:
                rec["ours_over_best_anchor"] = rec["ours_ms"] / measured[best]
        if rec["ours_ms"] and rec["fla_ms"]:
            rec["ratio"] = rec["fla_ms"] / rec["ours_ms"]
            rec["ahead_of_both"] = rec["ratio"] > max(r["flashqla_vs_fla"], r["flashinfer_vs_fla"])
        else:
            rec["ahead_of_both"] = None
        if args.check and fla is not None and (ours is not None or preps):
            try:
                o2, h2 = make_call(fla, inp, expand_qk_to=fla_expand)()
                torch.cuda.synchronize()
                rec["check"] = {}
                if ours is not None:
                    o1, h1 = make_call(ours, inp)()
                    torch.cuda.synchronize()
                    rec["check"].update(o_rms_rel=rms_rel(o1, o2), ht_rms_rel=rms_rel(h1, h2),
                                        ours_nan=bool(torch.isnan(o1).any().item()))
                    del o1, h1
                for name, prep in preps.items():
                    try:
                        oa, ha = prep.to_fla(prep.call())  # FlashInfer's o/state back to FLA's layout
                        torch.cuda.synchronize()
                        rec["check"].update({f"{name}_o_rms_rel": rms_rel(oa, o2), f"{name}_ht_rms_rel": rms_rel(ha, h2),
                                             f"{name}_nan": bool(torch.isnan(oa).any().item())})
                        del oa, ha
                    except Exception as e:  # noqa: BLE001
                        rec["errors"].append(f"check {anchors.LABELS[name]}: {type(e).__name__}: {str(e).strip()[:200]}")
                del o2, h2
            except Exception as e:  # noqa: BLE001
                rec["errors"].append(f"check: {type(e).__name__}: {str(e).strip()[:200]}")
        del preps
        del inp
        torch.cuda.empty_cache()
        out_rows.append(rec)
        chk = ""
        if rec.get("check"):
            c = rec["check"]
            for who, pre in [("", "")] + [(anchors.LABELS[n] + " ", n + "_") for n, _ in anchor_libs]:
                if c.get(pre + "o_rms_rel") is None:
                    continue
                chk += (f"  {who}o vs FLA {c[pre + 'o_rms_rel']:.1e} ht {c[pre + 'ht_rms_rel']:.1e}"
                        + ("  NaN!" if c[(pre or 'ours_') + 'nan'] else "")
                        + ("  (!)" if c[pre + "o_rms_rel"] > 0.01 else ""))
        anc = "".join(f"{anchors.LABELS[n]} {fmt(rec.get(n + '_ms'), '8.3f')} ms  " for n, _ in anchor_libs)
        if anchor_libs:
            anc += f"ours/best {fmt(rec.get('ours_over_best_anchor'), '5.2f')}  "
        print(f"  {i:3d} {r['model']:16s} {config_name(r):18s} ours {fmt(rec['ours_ms'], '8.3f')} ms  "
              + (f"(two-kernel {fmt(rec.get('ours_two_kernel_ms'), '8.3f')} ms)  " if args.also_two_kernel else "")
              + f"FLA {fmt(rec['fla_ms'], '8.3f')} ms  FLA/ours {fmt(rec['ratio'], '5.2f')}  " + anc
              + f"(pub. FlashQLA {r['flashqla_vs_fla']:.2f}, FlashInfer {r['flashinfer_vs_fla']:.2f})"
              f"{chk}{'  ' + '; '.join(rec['errors'] + rec['notes']) if rec['errors'] or rec['notes'] else ''}",
              flush=True)
        report(final=False)

    report(final=True)
    return 1 if any(x["errors"] for x in out_rows) else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--anchors", default=DEFAULT_ANCHORS, help="FlashQLA's published H200 table (default: %(default)s)")
    ap.add_argument("--list-rows", action="store_true", help="print the parsed rows and exit (no torch needed)")
    ap.add_argument("--also-two-kernel", action="store_true",
                    help="also time ours on its two-kernel path (QLA_GDN_FUSED=0: prepare + state kernels)")
    ap.add_argument("--rows", type=int, help="only the first N selected rows")
    ap.add_argument("--heads", help="only these head configs, e.g. 16/64,2/8")
    ap.add_argument("--layouts", help="only these layouts, e.g. 1x32768,8192x4,28672+4096")
    ap.add_argument("--warm-only", action="store_true", help="call each implementation on each row twice, time nothing")
    ap.add_argument("--check", action="store_true", help="also compare our o and final state with FLA's (rms relative)")
    ap.add_argument("--no-fla", action="store_true", help="time ours only")
    ap.add_argument("--no-ours", action="store_true", help="time FLA only")
    ap.add_argument("--flashqla", action="store_true",
                    help="also time FlashQLA (import flash_qla; measured column, FLA/FlashQLA, ours/best)")
    ap.add_argument("--flashinfer", action="store_true",
                    help="also time FlashInfer's GDN prefill (flashinfer.gdn_prefill; measured column)")
    ap.add_argument("--flashinfer-no-max-seqlen", action="store_true",
                    help="do not pass FlashInfer the longest sequence as its max_seqlen hint")
    ap.add_argument("--calls", type=int, default=10, help="calls captured per CUDA graph (default %(default)s)")
    ap.add_argument("--replays", type=int, default=15, help="graph replays, median taken (default %(default)s)")
    ap.add_argument("--beta-dtype", choices=("bf16", "f32"), default="bf16")
    ap.add_argument("--h0", action="store_true", help="pass a random initial state")
    ap.add_argument("--inputs", choices=("fla", "flashqla"), default="fla",
                    help="fla: the inputs above; flashqla: FlashQLA's benchmark inputs (B = 1 with int32 "
                         "cu_seqlens also for one sequence, an initial state, g = logsigmoid(randn) / 16 with a "
                         "quarter of the heads at g = 0, beta = sigmoid(randn) f32)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--no-write", action="store_true", help="do not write the .json/.md results")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="merge partial results (no GPU) into one result")
    args = ap.parse_args()
    if args.merge:
        return merge_results(args.merge, args.anchors, args.out_dir)

    if not os.path.exists(args.anchors):
        print(f"error: anchors file not found: {args.anchors} (pass --anchors PATH)", file=sys.stderr)
        return 2
    rows = parse_anchors(args.anchors)
    if not rows:
        print(f"error: no forward rows parsed from {args.anchors}", file=sys.stderr)
        return 2
    args.total_rows = len(rows)
    sel = select_rows(rows, args)
    if args.list_rows:
        list_rows(sel, args.anchors)
        return 0
    if args.no_fla and args.no_ours and not (args.flashqla or args.flashinfer):
        print("error: --no-fla and --no-ours leave nothing to run", file=sys.stderr)
        return 2
    if not sel:
        print("error: no rows selected", file=sys.stderr)
        return 2
    return run_gpu(sel, args)


if __name__ == "__main__":
    sys.exit(main())
