"""The GDN forward operator's two paths side by side in one process: the fused
kernel (QLA_GDN_FUSED=1) and the two-kernel path (QLA_GDN_FUSED=0), on rows of
FlashQLA's table, with the inputs, timing and anchors of bench/gdn_forward.py.
Per row: both times (CUDA-graph replay, median), fused / two-kernel, and the
fused output's and final state's rms and max error relative to the two-kernel
path's (which the conformance suite checks against float64).

For A/B runs of kernel variants: build one libqla per variant and run this once
per library (QLA_LIBRARY=...), each process timing its own two-kernel path as
the common reference.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so \\
        python3 bench/gdn_paths.py --heads 16/64,8/32 --layouts 1x32768,8192x4 [--tag NAME]
    python3 bench/gdn_paths.py --warm-only ...   # compile the rows' kernels into $QLA_CACHE_DIR (no GPU)
"""
import argparse
import functools
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gdn_forward as gf  # noqa: E402


def with_path(value, fn):
    saved = os.environ.get("QLA_GDN_FUSED")
    os.environ["QLA_GDN_FUSED"] = value
    try:
        return fn()
    finally:
        if saved is None:
            del os.environ["QLA_GDN_FUSED"]
        else:
            os.environ["QLA_GDN_FUSED"] = saved


def warm_only(rows, args):
    import qla.gdn as qg
    cfgs = {(len(r["seqlens"]) > 1) for r in rows}
    for varlen in sorted(cfgs):
        qg.warmup("bf16", beta_dtype=args.beta_dtype, varlen=varlen, cu_dtype="i64",
                  initial_state=args.h0, output_final_state=True)
        print(f"warmed varlen={varlen} beta={args.beta_dtype} h0={args.h0}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--anchors", default=gf.DEFAULT_ANCHORS)
    ap.add_argument("--heads", help="only these head configs, e.g. 16/64,2/8")
    ap.add_argument("--layouts", help="only these layouts, e.g. 1x32768,8192x4")
    ap.add_argument("--rows", type=int)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--replays", type=int, default=15)
    ap.add_argument("--beta-dtype", choices=("bf16", "f32"), default="bf16")
    ap.add_argument("--h0", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tag", default="", help="a name for this library/variant, printed and written")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--warm-only", action="store_true")
    ap.add_argument("--fused-only", action="store_true",
                    help="time the fused path alone (no two-kernel reference, no comparison of outputs)")
    ap.add_argument("--fused-segments", type=int, default=0,
                    help="the fused path with its sequences cut into segments of this many chunks "
                         "(segment_chunks; the two-kernel path keeps the model's split)")
    args = ap.parse_args()
    rows = gf.select_rows(gf.parse_anchors(args.anchors), args)
    if not rows:
        sys.exit("gdn_paths.py: no rows selected")
    if args.warm_only:
        return warm_only(rows, args)

    import torch
    import torch.nn.functional as F
    from qla.gdn import chunk_gated_delta_rule as ours

    out = []
    for i, r in enumerate(rows):
        inp = gf.make_inputs(torch, F, r, args, args.seed + i)
        res = {}
        for name, val in (("fused", "1"),) + ((("two", "0"),) if not args.fused_only else ()):
            fn = ours
            if name == "fused" and args.fused_segments:
                fn = functools.partial(ours, segment_chunks=args.fused_segments)
            call = gf.make_call(fn, inp)
            o, ht = with_path(val, call)
            torch.cuda.synchronize()
            ms, how, _, err = with_path(val, lambda: gf.measure(torch, call, args))
            res[name] = dict(o=o.float(), ht=ht, ms=ms, how=how, err=err)
        f = res["fused"]
        if args.fused_only:
            rec = dict(tag=args.tag, hqk=r["hqk"], hv=r["hv"], layout=r["layout"], fused_ms=f["ms"],
                       timing=[f["how"]], errors=[e for e in (f["err"],) if e])
            out.append(rec)
            print(f"[{args.tag}] {r['hqk']}/{r['hv']} {r['layout']:>12}: fused {gf.fmt(f['ms'], '7.3f')} ms"
                  + (f"  ERR {rec['errors']}" if rec["errors"] else ""), flush=True)
            del inp, res
            torch.cuda.empty_cache()
            continue
        t = res["two"]

        def errs(a, b):
            d = (a - b).float()
            return (d.pow(2).mean().sqrt() / b.float().pow(2).mean().sqrt().clamp_min(1e-30)).item(), \
                d.abs().max().item()
        o_rms, o_max = errs(f["o"], t["o"])
        h_rms, h_max = errs(f["ht"], t["ht"])
        rec = dict(tag=args.tag, hqk=r["hqk"], hv=r["hv"], layout=r["layout"], fused_ms=f["ms"], two_ms=t["ms"],
                   ratio=(f["ms"] / t["ms"]) if f["ms"] and t["ms"] else None, o_rms=o_rms, o_max=o_max,
                   ht_rms=h_rms, ht_max=h_max, timing=[f["how"], t["how"]], errors=[e for e in (f["err"], t["err"]) if e])
        out.append(rec)
        print(f"[{args.tag}] {r['hqk']}/{r['hv']} {r['layout']:>12}: fused {gf.fmt(f['ms'], '7.3f')} ms  "
              f"two-kernel {gf.fmt(t['ms'], '7.3f')} ms  ratio {gf.fmt(rec['ratio'], '5.3f')}  "
              f"o rms {o_rms:.2e} max {o_max:.2e}  ht rms {h_rms:.2e}" + (f"  ERR {rec['errors']}" if rec["errors"] else ""),
              flush=True)
        del inp, res
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(gf.json_safe(out), fh, indent=1)


if __name__ == "__main__":
    main()
