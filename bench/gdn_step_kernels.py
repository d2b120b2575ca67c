"""Where one GDN training step's GPU time goes, kernel by kernel: the forward +
backward of qla.chunk_gated_delta_rule (and, with --fla, FLA's) on backward
rows of FlashQLA's table, with FlashQLA's benchmark inputs (those of
bench/gdn_backward.py), under torch.profiler (CUPTI kernel records).

Per row: each kernel's device time per step (mean over --steps profiled
steps after two warm-up steps), their sum, and the step's span (first kernel
start to last kernel end, per step): span - sum is the time the GPU sat idle
between kernels (launch gaps, host work).

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so \\
        python3 bench/gdn_step_kernels.py --rows hk2_hv4/8k_1seq,hk16_hv32/32k_8seq [--fla] [--json OUT]
"""
import argparse
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdn_backward import DEFAULT_ANCHORS, parse_rows, row_inputs  # noqa: E402


def short(name):
    # QLA kernels are qla_<kernel>_<hash>; Triton kernels carry their function name
    return name if len(name) < 90 else name[:87] + "..."


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--anchors", default=DEFAULT_ANCHORS)
    ap.add_argument("--rows", required=True, help="comma-separated backward row names (bench/gdn_backward.py --list-rows)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--fla", action="store_true", help="also FLA's Triton forward + backward")
    ap.add_argument("--timeline", action="store_true", help="also list the last step's kernels in order")
    ap.add_argument("--json", help="write the per-kernel table here")
    args = ap.parse_args()
    by = {r["name"]: r for r in parse_rows(args.anchors)}
    bad = [w for w in args.rows.split(",") if w not in by]
    if bad:
        sys.exit(f"unknown rows {bad}")
    import torch
    from torch.profiler import ProfilerActivity, profile

    if not torch.cuda.is_available():
        print("SKIP: no GPU (torch.cuda.is_available() is False)")
        return 0
    import qla

    impls = [("qla", qla.chunk_gated_delta_rule, False)]
    if args.fla:
        os.environ.setdefault("FLA_FLASH_QLA", "0")
        os.environ.setdefault("FLA_TILELANG", "0")
        os.environ["QLA_FLA_BACKEND"] = "0"
        import fla.ops.common.chunk_o as fco
        fco.TRITON_ABOVE_3_7_1 = True
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_fn
        impls.append(("fla", fla_fn, True))
    out = []
    for name in args.rows.split(","):
        r = by[name]
        cu32, leaves, do, dht = row_inputs(r)
        for impl, fn, long_cu in impls:
            cu = cu32.long() if long_cu else cu32

            def step():
                for x in leaves:
                    x.grad = None
                o, ht = fn(*leaves[:5], initial_state=leaves[5], output_final_state=True, cu_seqlens=cu)
                torch.autograd.backward([o, ht], [do, dht])

            for _ in range(2):
                step()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(args.steps):
                    step()
                torch.cuda.synchronize()
            kern = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            kern.sort(key=lambda e: e.time_range.start)
            tot = defaultdict(float)
            cnt = defaultdict(int)
            for e in kern:
                tot[e.name] += e.time_range.elapsed_us()
                cnt[e.name] += 1
            s = args.steps
            kernel_sum = sum(tot.values()) / s
            span = (kern[-1].time_range.end - kern[0].time_range.start) / s if kern else 0.0
            print(f"== {name} {impl}: {len(kern) / s:.0f} kernels per step, kernel time {kernel_sum:.1f} us, "
                  f"span {span:.1f} us per step (idle {span - kernel_sum:.1f} us; span includes the gaps "
                  f"between steps)", flush=True)
            rows = sorted(tot, key=lambda n: -tot[n])
            for n in rows:
                print(f"   {tot[n] / s:9.1f} us  x{cnt[n] / s:4.1f}  {short(n)}")
            per = len(kern) // s
            if args.timeline and per:
                last = kern[-per:]
                print("   timeline of the last step (start offset, gap before, duration):")
                for i, e in enumerate(last):
                    gap = e.time_range.start - last[i - 1].time_range.end if i else 0.0
                    print(f"     +{e.time_range.start - last[0].time_range.start:8.1f} gap {gap:6.1f} "
                          f"{e.time_range.elapsed_us():8.1f} us  {short(e.name)}")
            out.append(dict(row=name, impl=impl, kernel_us=kernel_sum, span_us=span,
                            kernels={n: dict(us=tot[n] / s, calls=cnt[n] / s) for n in rows}))
        del leaves
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(gpu=torch.cuda.get_device_name(), command="python3 " + " ".join(sys.argv), rows=out), f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
