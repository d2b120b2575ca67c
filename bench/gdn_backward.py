"""GDN chunked forward + backward: QLA (qla.chunk_gated_delta_rule under
torch.autograd) against FLA's Triton chunk_gated_delta_rule, side by side in
one process, on the backward rows of FlashQLA's published H200 table (K = V =
128, bf16). FlashQLA's published backward time is listed beside each row (its
table's own FLA column too; that time is its backward alone). With --flashqla,
FlashQLA (flash_qla.chunk_gated_delta_rule under torch.autograd, the same
tensors, the same timed step, the same CUDA-event method) is also measured:
a forward + backward column comparable with QLA's and FLA's.

Inputs (FlashQLA's benchmark inputs): B = 1, N equal sequences packed with
cu_seqlens (int32 for QLA, int64 for FLA), an initial state (randn f32),
q, k = F.normalize(randn) bf16, v = randn bf16, g = logsigmoid(randn) / 16 f32
with a quarter of the v-heads at g = 0, beta = sigmoid(randn) f32, final
state out; do = randn bf16, dht = randn f32. One timed step = forward +
backward (torch.autograd.backward on o and the final state). Eager by
default, timed with CUDA events: 2 warm-up steps, then the median over --reps
of --steps steps. With --graph, --steps steps are captured in one CUDA graph
and the median replay is reported (QLA's step captures: it skips its host
check of cu_seqlens while capturing); an implementation whose step cannot be
captured is timed eager and the JSON's `method` says so. Each implementation's
step is run once more, eager, for its peak device memory above what was
allocated before it (torch.cuda.max_memory_allocated: what the forward
saves, the backward's workspace, the gradients; JSON `peak_mib`).

    PYTHONPATH=python:/path/to/fla_src QLA_LIBRARY=build/compiler/libqla.so \\
        python3 bench/gdn_backward.py [--rows hk16_hv32/8k_1seq,...] [--check]
    python3 bench/gdn_backward.py --list-rows      # parse the anchors only
    python3 bench/gdn_backward.py --warm-only --rows ...   # compile FLA's kernels first (in parallel
                                                           # processes, one per group of rows), then time
    ... --six                                      # also time QLA's six-kernel backward (QLA_GDN_BWD_FUSED=0)
                                                   # beside its default, the fused gradient kernel;
    ... --flashqla                                 # also time FlashQLA forward + backward (measured);
                                                   # with --warm-only it JIT-compiles FlashQLA's kernels too

Writes gdn_backward_<date>.json and .md in bench/results/ (after every row, so a
run cut short keeps what it measured).
"""
import argparse
import datetime
import json
import math
import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ANCHORS = os.path.normpath(os.path.join(ROOT, "..", "shared", "anchors", "flashqla_published_h200.txt"))
_ROW = re.compile(r"^(?P<model>hk\d+_hv\d+)\s+(?P<layout>\d+k_\d+seq)\s+(?P<hqk>\d+)\s+(?P<hv>\d+)\s+(?P<n>\d+)\s+"
                  r"(?P<fq>[\d.]+)ms\s+(?P<fla>[\d.]+)ms\s+(?P<x>[\d.]+)x\s*$")


def parse_rows(path):
    rows, on = [], False
    for line in open(path):
        if "BACKWARD BENCHMARKS" in line:
            on = True
            continue
        m = _ROW.match(line.strip()) if on else None
        if m:
            tokens = int(m["layout"].split("k_")[0]) * 1024
            rows.append(dict(name=f"{m['model']}/{m['layout']}", hqk=int(m["hqk"]), hv=int(m["hv"]),
                             nseq=int(m["n"]), tokens=tokens, flashqla_ms=float(m["fq"]),
                             fla_published_ms=float(m["fla"])))
    return rows


def row_inputs(r, K=128, V=128):
    """FlashQLA's benchmark inputs for a backward row (seed 0): int32
    cu_seqlens of N equal sequences, the leaves q, k, v, g, beta, h0 (fresh
    tensors requiring grad), do and dht."""
    import torch
    import torch.nn.functional as F

    dev, bf = "cuda", torch.bfloat16
    torch.manual_seed(0)
    T, N, Hqk, Hv = r["tokens"], r["nseq"], r["hqk"], r["hv"]
    cu32 = torch.arange(0, T + 1, T // N, dtype=torch.int32, device=dev)
    q = F.normalize(torch.randn(1, T, Hqk, K, device=dev), dim=-1).to(bf)
    k = F.normalize(torch.randn(1, T, Hqk, K, device=dev), dim=-1).to(bf)
    v = torch.randn(1, T, Hv, V, device=dev).to(bf)
    g = F.logsigmoid(torch.randn(1, T, Hv, device=dev)) / 16
    g[..., : Hv // 4] = 0.0
    beta = torch.sigmoid(torch.randn(1, T, Hv, device=dev))
    h0 = torch.randn(N, Hv, K, V, device=dev)
    do = torch.randn(1, T, Hv, V, device=dev).to(bf)
    dht = torch.randn(N, Hv, K, V, device=dev)
    leaves = [x.clone().requires_grad_() for x in (q, k, v, g, beta, h0)]
    return cu32, leaves, do, dht


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def write(res, out_dir):
    date = res["date"]
    os.makedirs(out_dir, exist_ok=True)
    gpu = "".join(w for w in ("H100", "H200", "B200") if w in res.get("gpu", "")).lower() or "gpu"
    base = os.path.join(out_dir, f"gdn_backward_{gpu}_{date}")
    with open(base + ".json", "w") as f:
        json.dump(res, f, indent=1)
    fqm = any(r.get("flashqla_measured_ms") for r in res["rows"])  # FlashQLA measured here (--flashqla)
    nan = float("nan")
    lines = [f"# GDN forward + backward, QLA vs FLA{' and FlashQLA' if fqm else ''} ({res.get('gpu', '?')}, {date})", "",
             f"Command: `{res['command']}`", ""]
    if fqm:
        lines += [f"FlashQLA measured: {(res.get('flashqla') or {}).get('version', '?')}, "
                  "flash_qla.chunk_gated_delta_rule forward + backward under torch.autograd, the same tensors and "
                  "timed step as QLA and FLA. \"FlashQLA published ms\" is its own table's backward alone "
                  "(not comparable with a forward + backward step).", ""]
    fu = any(r.get("qla_six_ms") for r in res["rows"])  # --six
    head = ["row", "Hqk/Hv", "seqs", "QLA ms"] + (["QLA six ms", "fused/six"] if fu else []) + ["FLA ms", "FLA/QLA"]
    if fqm:
        head += ["FlashQLA ms (measured)", "FLA/FlashQLA", "QLA/FlashQLA (measured)"]
    head += ["FlashQLA published ms", "QLA/FlashQLA", "QLA peak MiB"] + (["FlashQLA peak MiB"] if fqm else [])
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in res["rows"]:
        q, fl, fm = r.get("qla_ms"), r.get("fla_ms"), r.get("flashqla_measured_ms")
        sp = fl / q if q and fl else nan
        vs = q / r["flashqla_ms"] if q else nan
        cells = [r["name"], f"{r['hqk']}/{r['hv']}", str(r["nseq"]), f"{q or nan:.3f}"]
        if fu:
            qs = r.get("qla_six_ms")
            cells += [f"{qs or nan:.3f}", f"{q / qs if qs and q else nan:.3f}"]
        cells += [f"{fl or nan:.3f}", f"{sp:.2f}"]
        if fqm:
            cells += [f"{fm or nan:.3f}", f"{fl / fm if fl and fm else nan:.2f}", f"{q / fm if q and fm else nan:.2f}"]
        pk = r.get("peak_mib", {})
        cells += [f"{r['flashqla_ms']:.3f}", f"{vs:.2f}", f"{pk.get('qla', nan):.0f}"]
        if fqm:
            cells.append(f"{pk.get('flashqla', nan):.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    done = [r for r in res["rows"] if r.get("qla_ms") and r.get("fla_ms")]
    lines += ["", f"Geometric mean over {len(done)} rows: FLA/QLA = "
              f"{geomean([r['fla_ms'] / r['qla_ms'] for r in done]):.3f}, QLA/FlashQLA(published) = "
              f"{geomean([r['qla_ms'] / r['flashqla_ms'] for r in done]):.3f}"]
    if fqm:
        both = [r for r in res["rows"] if r.get("qla_ms") and r.get("flashqla_measured_ms")]
        flm = [r for r in res["rows"] if r.get("fla_ms") and r.get("flashqla_measured_ms")]
        worst = max(both, key=lambda r: r["qla_ms"] / r["flashqla_measured_ms"], default=None)
        lines += ["", f"FlashQLA measured, over {len(both)} rows: QLA/FlashQLA = "
                  f"{geomean([r['qla_ms'] / r['flashqla_measured_ms'] for r in both]):.3f} (worst "
                  + (f"{worst['qla_ms'] / worst['flashqla_measured_ms']:.3f}, {worst['name']}" if worst else "—")
                  + f"), FLA/FlashQLA = {geomean([r['fla_ms'] / r['flashqla_measured_ms'] for r in flm]):.3f}"]
        mem = [r for r in res["rows"] if r.get("peak_mib", {}).get("qla") and r["peak_mib"].get("flashqla")]
        if mem:
            over = [r["name"] for r in mem if r["peak_mib"]["qla"] > r["peak_mib"]["flashqla"]]
            lines += ["", f"Peak memory of a step, QLA / FlashQLA, over {len(mem)} rows: worst "
                      f"{max(r['peak_mib']['qla'] / r['peak_mib']['flashqla'] for r in mem):.2f}, "
                      f"QLA above FlashQLA on {len(over)}" + (f" ({', '.join(over)})" if over else "")]
    if fu:
        fr = [r for r in res["rows"] if r.get("qla_ms") and r.get("qla_six_ms")]
        slower = [r["name"] for r in fr if r["qla_ms"] > r["qla_six_ms"]]
        lines += ["", f"QLA's default (the fused gradient kernel) against its six kernels (QLA_GDN_BWD_FUSED=0), "
                  f"over {len(fr)} rows: fused/six = {geomean([r['qla_ms'] / r['qla_six_ms'] for r in fr]):.3f}, "
                  f"slower on {len(slower)}" + (f" ({', '.join(slower)})" if slower else "")]
    if res.get("check"):
        lines += ["", "QLA vs FLA gradients (rms rel, per row): see the JSON (`diff`)"
                  + ("; FlashQLA vs FLA: `diff_flashqla`." if fqm else ".")]
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--anchors", default=DEFAULT_ANCHORS)
    ap.add_argument("--rows", help="comma-separated row names (default: all)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="also compare QLA's gradients with FLA's")
    ap.add_argument("--list-rows", action="store_true")
    ap.add_argument("--warm-only", action="store_true",
                    help="run one step of each selected row (compiles FLA's Triton kernels into Triton's cache) "
                         "and time nothing; sets FLA_CACHE_RESULTS=0 so that no autotune choice made here is "
                         "kept for a timed run (run several of these in parallel, one per group of rows)")
    ap.add_argument("--no-qla", action="store_true", help="with --warm-only: FLA only (and FlashQLA with --flashqla)")
    ap.add_argument("--no-fla", action="store_true",
                    help="time QLA (and FlashQLA with --flashqla) without FLA: A/B runs of QLA builds, one process per "
                         "build, where FLA's autotune would cost more device time than the measurement")
    ap.add_argument("--flashqla", action="store_true",
                    help="also time FlashQLA forward + backward (import flash_qla; a measured column beside the "
                         "published one)")
    ap.add_argument("--six", action="store_true",
                    help="also time QLA's six-kernel backward (QLA_GDN_BWD_FUSED=0, read at every call): column "
                         "'QLA six ms' beside 'QLA ms' (the default: the fused gradient kernel)")
    ap.add_argument("--graph", action="store_true",
                    help="time each step as CUDA-graph replay (forward + backward captured in one graph; "
                         "falls back to eager for an implementation whose step cannot be captured, and says so)")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    rows = parse_rows(args.anchors)
    if args.rows:
        by = {r["name"]: r for r in rows}
        bad = [w for w in args.rows.split(",") if w not in by]
        if bad:
            sys.exit(f"unknown rows {bad} (see --list-rows)")
        rows = [by[w] for w in args.rows.split(",")]  # in the order given
    if args.list_rows:
        for r in rows:
            print(r)
        return 0
    if args.warm_only:
        os.environ["FLA_CACHE_RESULTS"] = "0"
    os.environ.setdefault("FLA_FLASH_QLA", "0")
    os.environ.setdefault("FLA_TILELANG", "0")
    os.environ["QLA_FLA_BACKEND"] = "0"  # never let FLA's dispatch route to QLA (qla.fla) in the FLA column
    try:
        import torch
    except ImportError:
        print("error: timing needs PyTorch with CUDA (--list-rows only parses the anchors)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("SKIP: no GPU (torch.cuda.is_available() is False)")
        return 0
    fq_fn = None
    fq_info = None
    if args.flashqla:
        import anchors
        fq_lib, why = anchors.import_flashqla()  # prints a SKIP line with the reason if it does not import
        fq_info = fq_lib.info() if fq_lib else dict(skipped=why)
        if fq_lib:
            fq_fn = anchors.flashqla_autograd_fn(fq_lib)
    import qla
    from timing import time_eager, time_graph
    fla_fn = None
    if not args.no_fla:
        import fla.ops.common.chunk_o as fco
        fco.TRITON_ABOVE_3_7_1 = True  # FLA's backward on Triton 3.6 (its issue #640; checked correct on the H200)
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_fn

    res = dict(date=datetime.date.today().isoformat(), gpu=torch.cuda.get_device_name(),
               command="python3 " + " ".join(sys.argv), torch=torch.__version__, rows=[], check=args.check)
    if args.flashqla:
        res["flashqla"] = fq_info
    for r in rows:
        cu32, leaves, do, dht = row_inputs(r)

        def step(fn, cu):
            for x in leaves:
                x.grad = None
            o, ht = fn(*leaves[:5], initial_state=leaves[5], output_final_state=True, cu_seqlens=cu)
            torch.autograd.backward([o, ht], [do, dht])

        def peak(fn, cu, key):
            """The step's peak device memory above what is allocated before it
            (what the forward saves, the backward's workspace and the gradients),
            MiB, from torch.cuda.max_memory_allocated around one eager step."""
            for x in leaves:
                x.grad = None
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            step(fn, cu)
            torch.cuda.synchronize()
            r.setdefault("peak_mib", {})[key] = (torch.cuda.max_memory_allocated() - base) / 2**20

        def timed(fn, cu, key):
            peak(fn, cu, key)
            if args.graph:
                try:
                    ms = time_graph(lambda: step(fn, cu), calls=args.steps, replays=max(args.reps, 5))[0]
                    r.setdefault("method", {})[key] = "graph"
                    return ms
                except Exception as e:  # noqa: BLE001
                    torch.cuda.synchronize()
                    r.setdefault("method", {})[key] = f"eager (capture failed: {type(e).__name__}: {str(e)[:160]})"
                    print(f"{r['name']:22s} {key}: capture failed ({type(e).__name__}), timed eager", flush=True)
            else:
                r.setdefault("method", {})[key] = "eager"
            return time_eager(lambda: step(fn, cu), calls=args.steps, reps=args.reps)[0]

        def six(f):
            """f() with QLA_GDN_BWD_FUSED=0 (the backward plan reads it at every call)."""
            os.environ["QLA_GDN_BWD_FUSED"] = "0"
            try:
                return f()
            finally:
                del os.environ["QLA_GDN_BWD_FUSED"]

        t0 = time.time()
        if args.warm_only:
            if not args.no_qla:
                step(qla.chunk_gated_delta_rule, cu32)
                if args.six:
                    six(lambda: step(qla.chunk_gated_delta_rule, cu32))
            if fla_fn is not None:
                step(fla_fn, cu32.long())
            if fq_fn is not None:
                try:
                    step(fq_fn, cu32)  # JIT-compiles FlashQLA's kernels into TileLang's disk cache
                except Exception as e:  # noqa: BLE001
                    print(f"{r['name']:22s} FlashQLA FAILED: {type(e).__name__}: {e}", flush=True)
            torch.cuda.synchronize()
            print(f"{r['name']:22s} warmed in {time.time() - t0:.0f} s", flush=True)
            del leaves
            continue
        r["qla_ms"] = timed(qla.chunk_gated_delta_rule, cu32, "qla")
        if args.check:
            step(qla.chunk_gated_delta_rule, cu32)
            mine = [x.grad.clone() for x in leaves]
        if args.six:
            r["qla_six_ms"] = six(lambda: timed(qla.chunk_gated_delta_rule, cu32, "qla_six"))
            if args.check:
                six(lambda: step(qla.chunk_gated_delta_rule, cu32))
                r["diff_six"] = {n: ((x.grad.double() - a.double()).pow(2).mean().sqrt()
                                     / a.double().pow(2).mean().sqrt()).item()
                                 for n, x, a in zip(("dq", "dk", "dv", "dg", "dbeta", "dh0"), leaves, mine)}
        r["fla_ms"] = timed(fla_fn, cu32.long(), "fla") if fla_fn is not None else None
        names = ("dq", "dk", "dv", "dg", "dbeta", "dh0")
        if args.check and fla_fn is not None:
            step(fla_fn, cu32.long())
            ref = [x.grad for x in leaves]
            r["diff"] = {n: ((a.double() - b.double()).pow(2).mean().sqrt()
                             / b.double().pow(2).mean().sqrt()).item()
                         for n, a, b in zip(names, mine, ref)}
        if fq_fn is not None:
            # FlashQLA forward + backward, timed like the others (int32 cu_seqlens and f32 beta as they are)
            try:
                r["flashqla_measured_ms"] = timed(fq_fn, cu32, "flashqla")
                if args.check and fla_fn is not None:
                    step(fq_fn, cu32)
                    r["diff_flashqla"] = {n: ((x.grad.double() - b.double()).pow(2).mean().sqrt()
                                              / b.double().pow(2).mean().sqrt()).item()
                                          for n, x, b in zip(names, leaves, ref)}
            except Exception as e:  # noqa: BLE001
                r["flashqla_error"] = f"{type(e).__name__}: {str(e).strip()[:300]}"
        res["rows"].append(r)
        fm = r.get("flashqla_measured_ms")
        print(f"{r['name']:22s} QLA {r['qla_ms']:.3f} ms  "
              + (f"QLA six {r['qla_six_ms']:.3f} ms  " if r.get("qla_six_ms") else "")
              + (f"FLA {r['fla_ms']:.3f} ms  FLA/QLA {r['fla_ms'] / r['qla_ms']:.2f}  " if r["fla_ms"] else "")
              + (f"FlashQLA {fm:.3f} ms  QLA/FlashQLA {r['qla_ms'] / fm:.2f}  " if fm else "")
              + (f"FlashQLA FAILED {r['flashqla_error']}  " if r.get("flashqla_error") else "")
              + f"(FlashQLA published [bwd only] {r['flashqla_ms']:.3f})  {time.time() - t0:.0f} s"
              + (f"  diff {r['diff']}" if r.get("diff") else "")
              + (f"  FlashQLA diff {r['diff_flashqla']}" if r.get("diff_flashqla") else ""), flush=True)
        write(res, args.out_dir)
        del leaves
        torch.cuda.empty_cache()
    if not args.warm_only:
        print(write(res, args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
