"""One GDN forward row of FlashQLA's table (the inputs of bench/gdn_context_parallel.py),
timed, and with --trace traced: the kernels are compiled with tracing (QLA_TRACE=1, set
here before QLA compiles anything), the last call's trace is written to OUT and summarized
(python -m qla.trace; docs/internals.md, "Tracing"). Run it once without --trace in a
separate process for the untraced time: the operator keeps the kernels it compiled.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so \\
        python3 bench/gdn_trace.py 16/64 1x32768 --segments -1 [--trace OUT] [--bv 64]
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
    a = ap.parse_args()
    os.environ["QLA_TRACE"] = "1" if a.trace else "0"
    if a.bv:
        os.environ["QLA_GDN_FUSED_BV"] = str(a.bv)
    import torch
    import torch.nn.functional as F
    import qla
    import qla.trace as qt
    from gdn_context_parallel import flashqla_inputs, layout_lens
    hqk, hv = (int(x) for x in a.heads.split("/"))
    inp = flashqla_inputs(torch, F, layout_lens(a.layout), hqk, hv)

    def call():
        return qla.chunk_gated_delta_rule(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"],
                                          initial_state=inp["initial_state"], output_final_state=True,
                                          cu_seqlens=inp["cu_seqlens"], segment_chunks=a.segments)
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
    print(f"{a.heads} {a.layout} segments={a.segments} bv={a.bv or 'model'} trace={'on' if a.trace else 'off'}: "
          f"median {times[len(times) // 2]:.3f} ms over {a.calls} calls (eager, events)", flush=True)
    if a.trace:
        n = qla.trace_dump(a.trace)
        print(f"wrote {n} kernel traces to {a.trace}")
        for kt in qt.read(a.trace):
            qt.summarize(kt, a.block, a.timeline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
