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

Writes bench/results/gdn_forward_<date>.json and .md (suffix _partial when rows
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
    return {k: os.environ.get(k) for k in ("FLA_FLASH_QLA", "FLA_TILELANG", "FLA_INTRACARD_CP", "FLA_CACHE_RESULTS")}


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
        try:
            info["fla_commit"] = subprocess.run(["git", "-C", info["fla_path"], "rev-parse", "HEAD"],
                                                capture_output=True, text=True, timeout=10).stdout.strip() or None
        except Exception:  # noqa: BLE001
            info["fla_commit"] = None
    return ours, fla, info


def make_inputs(torch, F, r, args, seed):
    dev = "cuda"
    gen = torch.Generator(device=dev).manual_seed(seed)
    T = r["tokens"]
    Hqk, Hv = r["hqk"], r["hv"]
    bf = torch.bfloat16

    def randn(*shape):
        return torch.randn(*shape, device=dev, dtype=torch.float32, generator=gen)

    q = F.normalize(randn(1, T, Hqk, K_DIM), p=2, dim=-1).to(bf)
    k = F.normalize(randn(1, T, Hqk, K_DIM), p=2, dim=-1).to(bf)
    v = randn(1, T, Hv, V_DIM).to(bf)
    g = F.logsigmoid(randn(1, T, Hv))
    beta = torch.sigmoid(randn(1, T, Hv)).to(torch.float32 if args.beta_dtype == "f32" else bf)
    cu = None
    if len(r["seqlens"]) > 1:
        offs = [0]
        for L in r["seqlens"]:
            offs.append(offs[-1] + L)
        cu = torch.tensor(offs, dtype=torch.int64, device=dev)
    N = len(r["seqlens"])
    h0 = randn(N, Hv, K_DIM, V_DIM) if args.h0 else None
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


def time_graph(torch, fn, calls, replays):
    """Median ms per call over `replays` replays of a graph of `calls` calls."""
    from timing import time_graph as _time_graph
    return _time_graph(fn, calls=calls, replays=replays)


def time_eager(torch, fn, calls, replays):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(calls):
            fn()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) / calls)
    times.sort()
    return times[len(times) // 2], times


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


def write_markdown(res, check):
    m = res["meta"]
    lines = [f"# GDN forward: QLA vs FLA (Triton), {m['gpu']}, {m['date']}", "",
             f"Command: `{m['command']}`", "",
             f"torch {m['torch']}, triton {m.get('triton')}, FLA {m.get('fla_version')} "
             f"({m.get('fla_commit') or 'commit unknown'}); FLA env {m.get('fla_env')}. "
             f"K = V = 128, bf16 q/k/v, f32 g, {m['inputs']['beta']} beta, output_final_state=True"
             f"{', initial state' if m['inputs']['h0'] else ''}. Timing: {m['timing']}.", "",
             "FlashQLA/FLA and FlashInfer/FLA are the published speedups over FLA of FlashQLA's H200 table "
             "(FLA 0.5.1, torch 2.9.1), not measured here. \"ahead\": our FLA/ours above both.", ""]
    head = ["model", "Hqk/Hv", "sequences", "ours ms", "FLA ms", "FLA/ours", "FlashQLA/FLA (pub.)",
            "FlashInfer/FLA (pub.)", "FlashQLA/FlashInfer (pub.)", "ahead"]
    if check:
        head.append("o vs FLA (rms rel)")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in res["rows"]:
        cells = [r["model"], f"{r['hqk']}/{r['hv']}", r["layout"], fmt(r["ours_ms"], ".3f"), fmt(r["fla_ms"], ".3f"),
                 fmt(r["ratio"], ".2f") + ("×" if r["ratio"] else ""), f"{r['published']['flashqla_vs_fla']:.2f}×",
                 f"{r['published']['flashinfer_vs_fla']:.2f}×", f"{r['published']['flashqla_vs_flashinfer']:.2f}×",
                 "—" if r["ahead_of_both"] is None else ("yes" if r["ahead_of_both"] else "**no**")]
        if check:
            cells.append(fmt((r.get("check") or {}).get("o_rms_rel"), ".1e"))
        if r.get("errors") or r.get("notes"):
            cells[-1] += " (" + "; ".join(r["errors"] + r["notes"]).replace("|", "/")[:160] + ")"
        lines.append("| " + " | ".join(cells) + " |")
    gm = res["geomean"]
    lines += ["", f"Geometric mean over {gm['rows']} rows: FLA/ours **{fmt(gm['fla_over_ours'], '.2f')}×** "
              f"(published on the same rows: FlashQLA/FLA {fmt(gm['flashqla_vs_fla_published'], '.2f')}×, "
              f"FlashInfer/FLA {fmt(gm['flashinfer_vs_fla_published'], '.2f')}×); "
              f"ahead of both on {gm['rows_ahead_of_both']} of {gm['rows']} rows; "
              f"min FLA/ours {fmt(gm['min_fla_over_ours'], '.2f')}×.", ""]
    return "\n".join(lines)


def summarize(rows):
    """The geometric means of a result's rows."""
    measured = [x for x in rows if x["ratio"]]
    return dict(rows=len(measured),
                fla_over_ours=geomean([x["ratio"] for x in measured]),
                min_fla_over_ours=min((x["ratio"] for x in measured), default=float("nan")),
                flashqla_vs_fla_published=geomean([x["published"]["flashqla_vs_fla"] for x in measured]),
                flashinfer_vs_fla_published=geomean([x["published"]["flashinfer_vs_fla"] for x in measured]),
                rows_ahead_of_both=sum(1 for x in measured if x["ahead_of_both"]))


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
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    gpu = torch.cuda.get_device_name()
    print(f"{gpu}, torch {torch.__version__}, triton {triton_version}, "
          f"FLA {info.get('fla_version', '-')} {info.get('fla_commit') or ''}, {len(rows)} rows", flush=True)

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
                              f"{args.replays} replays (per-row 'ours_timing'/'fla_timing' say if eager was used)"),
                      inputs=dict(K=K_DIM, V=V_DIM, qkv="bf16", g="logsigmoid(randn) f32",
                                  beta=f"sigmoid(randn) {args.beta_dtype}", qk="F.normalize(randn), outside timing",
                                  scale="K^-0.5", output_final_state=True, h0=bool(args.h0),
                                  varlen="multi-sequence rows packed, B = 1, int64 cu_seqlens; 1xT rows B = 1 plain",
                                  seed=args.seed)),
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
        if rec["ours_ms"] and rec["fla_ms"]:
            rec["ratio"] = rec["fla_ms"] / rec["ours_ms"]
            rec["ahead_of_both"] = rec["ratio"] > max(r["flashqla_vs_fla"], r["flashinfer_vs_fla"])
        else:
            rec["ahead_of_both"] = None
        if args.check and ours is not None and fla is not None:
            try:
                o1, h1 = make_call(ours, inp)()
                o2, h2 = make_call(fla, inp, expand_qk_to=fla_expand)()
                torch.cuda.synchronize()
                rec["check"] = dict(o_rms_rel=rms_rel(o1, o2), ht_rms_rel=rms_rel(h1, h2),
                                    ours_nan=bool(torch.isnan(o1).any().item()))
                del o1, h1, o2, h2
            except Exception as e:  # noqa: BLE001
                rec["errors"].append(f"check: {type(e).__name__}: {str(e).strip()[:200]}")
        del inp
        torch.cuda.empty_cache()
        out_rows.append(rec)
        chk = ""
        if rec.get("check"):
            c = rec["check"]
            chk = f"  o vs FLA {c['o_rms_rel']:.1e} ht {c['ht_rms_rel']:.1e}" + ("  NaN!" if c["ours_nan"] else "") + \
                  ("  (!)" if c["o_rms_rel"] > 0.01 else "")
        print(f"  {i:3d} {r['model']:16s} {config_name(r):18s} ours {fmt(rec['ours_ms'], '8.3f')} ms  "
              + (f"(two-kernel {fmt(rec.get('ours_two_kernel_ms'), '8.3f')} ms)  " if args.also_two_kernel else "")
              + f"FLA {fmt(rec['fla_ms'], '8.3f')} ms  FLA/ours {fmt(rec['ratio'], '5.2f')}  "
              f"(pub. FlashQLA {r['flashqla_vs_fla']:.2f}, FlashInfer {r['flashinfer_vs_fla']:.2f})"
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
    ap.add_argument("--calls", type=int, default=10, help="calls captured per CUDA graph (default %(default)s)")
    ap.add_argument("--replays", type=int, default=15, help="graph replays, median taken (default %(default)s)")
    ap.add_argument("--beta-dtype", choices=("bf16", "f32"), default="bf16")
    ap.add_argument("--h0", action="store_true", help="pass a random initial state")
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
    if args.no_fla and args.no_ours:
        print("error: --no-fla and --no-ours leave nothing to run", file=sys.stderr)
        return 2
    if not sel:
        print("error: no rows selected", file=sys.stderr)
        return 2
    return run_gpu(sel, args)


if __name__ == "__main__":
    sys.exit(main())
