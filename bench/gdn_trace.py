"""One GDN row of FlashQLA's table (the inputs of bench/gdn_context_parallel.py), the
forward or (--backward) forward + backward, timed, and with --trace traced: the kernels
are compiled with tracing (QLA_TRACE=1, set here before QLA compiles anything), the last
call's trace is written to OUT and summarized (python -m qla.trace; docs/internals.md,
"Tracing"). Run it once without --trace in a separate process for the untraced time: the
operator keeps the kernels it compiled. --profile prints the per-kernel device time of a
call (torch.profiler, mean over --calls calls): where a step's time goes, kernel by kernel.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so \\
        python3 bench/gdn_trace.py 16/64 1x32768 --segments -1 [--trace OUT] [--bv 64]
    ... 16/32 8x1024 --backward --profile [--trace OUT]   # the fused gradient kernel (the default)
    ... 16/32 8x1024 --backward --six-bwd --profile       # the six kernels (QLA_GDN_BWD_FUSED=0)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("heads")
    ap.add_argument("layout")
    ap.add_argument("--segments", type=int, default=0, help="segment_chunks: 0 the model's, -1 no split")
    ap.add_argument("--bv", type=int, default=0, help="QLA_GDN_FUSED_BV (0: the model's)")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--trace", help="trace the kernels and write the trace here")
    ap.add_argument("--block", type=int, default=0)
    ap.add_argument("--timeline", type=int, default=0)
    ap.add_argument("--backward", action="store_true",
                    help="time (and trace) forward + backward under torch.autograd (do, dht random)")
    ap.add_argument("--fused-bwd", action="store_true",
                    help="with --backward: QLA_GDN_BWD_FUSED=1 (the fused gradient kernel, the default)")
    ap.add_argument("--six-bwd", action="store_true",
                    help="with --backward: QLA_GDN_BWD_FUSED=0 (the six kernels)")
    ap.add_argument("--profile", action="store_true", help="per-kernel device time (torch.profiler)")
    a = ap.parse_args()
    if (a.fused_bwd or a.six_bwd) and not a.backward:
        ap.error("--fused-bwd and --six-bwd need --backward")
    if a.fused_bwd and a.six_bwd:
        ap.error("--fused-bwd or --six-bwd, not both")
    os.environ["QLA_TRACE"] = "1" if a.trace else "0"
    if a.fused_bwd or a.six_bwd:
        os.environ["QLA_GDN_BWD_FUSED"] = "1" if a.fused_bwd else "0"
    if a.bv:
        os.environ["QLA_GDN_FUSED_BV"] = str(a.bv)
    import torch
    import torch.nn.functional as F
    import qla
    import qla.trace as qt
    from gdn_context_parallel import flashqla_inputs, layout_lens
    hqk, hv = (int(x) for x in a.heads.split("/"))
    inp = flashqla_inputs(torch, F, layout_lens(a.layout), hqk, hv)

    names = ("q", "k", "v", "g", "beta", "initial_state")
    leaves = {n: inp[n].detach().clone().requires_grad_(a.backward) for n in names}
    grads = None

    def call():
        o, ht = qla.chunk_gated_delta_rule(*(leaves[n] for n in names[:5]),
                                           initial_state=leaves["initial_state"], output_final_state=True,
                                           cu_seqlens=inp["cu_seqlens"], segment_chunks=a.segments)
        if a.backward:
            for x in leaves.values():
                x.grad = None
            torch.autograd.backward([o, ht], grads)
        return o

    if a.backward:
        gen = torch.Generator(device="cuda").manual_seed(1)
        o, ht = qla.chunk_gated_delta_rule(*(leaves[n] for n in names[:5]), initial_state=leaves["initial_state"],
                                           output_final_state=True, cu_seqlens=inp["cu_seqlens"])
        grads = [torch.randn(o.shape, generator=gen, device="cuda").to(o.dtype),
                 torch.randn(ht.shape, generator=gen, device="cuda")]
        del o, ht
    call()
    torch.cuda.synchronize()
    times = []
    for _ in range(a.calls):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        call()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1))
    times.sort()
    what = ("forward + backward (" + ("six kernels" if a.six_bwd else "fused gradient kernel where K, V <= 128") + ")"
            if a.backward else "forward")
    print(f"{a.heads} {a.layout} {what} segments={a.segments} bv={a.bv or 'model'} "
          f"trace={'on' if a.trace else 'off'}: median {times[len(times) // 2]:.3f} ms over {a.calls} calls "
          "(eager, events)", flush=True)
    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(a.calls):
                call()
            torch.cuda.synchronize()
        rows = sorted(prof.key_averages(), key=lambda e: -e.device_time_total)
        total = sum(e.device_time_total for e in rows)
        print(f"per-kernel device time, mean of {a.calls} calls ({total / a.calls / 1000:.3f} ms a call in all):")
        for e in rows[:16]:
            print(f"  {e.device_time_total / a.calls / 1000:8.3f} ms  {100 * e.device_time_total / total:5.1f}%  "
                  f"x{e.count / a.calls:<4g} {e.key[:100]}")
    if a.trace:
        n = qla.trace_dump(a.trace)
        print(f"wrote {n} kernel traces to {a.trace}")
        for kt in qt.read(a.trace):
            qt.summarize(kt, a.block, a.timeline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
