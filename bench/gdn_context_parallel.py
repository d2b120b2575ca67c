"""Exact context parallelism of the GDN forward: the whole operator timed
with every sequence in one segment (segment_chunks=-1), with the cost model's
choice (0) and with forced segment lengths, on FlashQLA's benchmark inputs
(B = 1 varlen with int32 cu_seqlens, an initial state, g = logsigmoid(randn)/16
with a quarter of the heads at g = 0, beta = sigmoid(randn) f32, final state
out; K = V = 128, bf16). Also checks that each split result matches the
unsplit one (rms relative). CUDA-graph replay, median (bench/timing.py).

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 bench/gdn_context_parallel.py \\
        [--heads 2/8,4/16] [--layouts 1x32768,28672+4096] [--segments 8,16,32,64] [--json OUT]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import time_graph  # noqa: E402


def layout_lens(layout):
    if "+" in layout:
        return [int(x) for x in layout.split("+")]
    a, b = (int(x) for x in layout.split("x"))
    return [max(a, b)] * min(a, b)


def flashqla_inputs(torch, F, lens, hqk, hv, seed=0):
    """FlashQLA's benchmark/bench_gated_delta_rule.py inputs, as its header describes them."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    T, K, V = sum(lens), 128, 128

    def randn(*s):
        return torch.randn(*s, device="cuda", generator=gen)

    q = F.normalize(randn(1, T, hqk, K), dim=-1).to(torch.bfloat16)
    k = F.normalize(randn(1, T, hqk, K), dim=-1).to(torch.bfloat16)
    v = randn(1, T, hv, V).to(torch.bfloat16)
    g = F.logsigmoid(randn(1, T, hv)) / 16
    g[:, :, : hv // 4] = 0  # a quarter of the heads do not decay
    beta = torch.sigmoid(randn(1, T, hv))
    offs = [0]
    for L in lens:
        offs.append(offs[-1] + L)
    cu = torch.tensor(offs, dtype=torch.int32, device="cuda")
    h0 = randn(len(lens), hv, K, V)
    return dict(q=q, k=k, v=v, g=g.contiguous(), beta=beta, initial_state=h0, cu_seqlens=cu)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--heads", default="2/8,4/16,8/32,16/64")
    ap.add_argument("--layouts", default="1x32768,1x8192,1x2048,28672+4096,8192x4")
    ap.add_argument("--segments", default="8,16,32,64,128")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--replays", type=int, default=15)
    ap.add_argument("--json")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    import qla

    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for heads in args.heads.split(","):
        hqk, hv = (int(x) for x in heads.split("/"))
        for layout in args.layouts.split(","):
            lens = layout_lens(layout)
            inp = flashqla_inputs(torch, F, lens, hqk, hv)
            chunks = max(lens) // 64

            def run(seg):
                return qla.chunk_gated_delta_rule(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"],
                                                  initial_state=inp["initial_state"], output_final_state=True,
                                                  cu_seqlens=inp["cu_seqlens"], segment_chunks=seg)

            whole = run(-1)
            settings = [-1, 0] + [int(s) for s in args.segments.split(",") if int(s) < chunks]
            res = {}
            for seg in settings:
                ms, _ = time_graph(lambda: run(seg), args.calls, args.replays)
                o, ht = run(seg)
                d = max(float((o.float() - whole[0].float()).pow(2).mean().sqrt() / whole[0].float().pow(2).mean().sqrt()),
                        float((ht - whole[1]).pow(2).mean().sqrt() / whole[1].pow(2).mean().sqrt()))
                res[seg] = (ms, d)
            best = min((s for s in settings if s > 0), key=lambda s: res[s][0], default=None)
            line = f"{heads:6s} {layout:12s} whole {res[-1][0]:.3f} ms  model {res[0][0]:.3f} ms ({res[-1][0] / res[0][0]:.2f}x)"
            if best is not None:
                line += f"  best forced {best} chunks {res[best][0]:.3f} ms"
            line += "  | " + " ".join(f"{s}:{res[s][0]:.3f}" for s in settings if s > 0)
            line += f"  | max diff vs whole {max(d for _, d in res.values()):.1e}"
            print(line, flush=True)
            rows.append(dict(heads=heads, layout=layout, times_ms={str(s): res[s][0] for s in settings},
                             diff_vs_whole={str(s): res[s][1] for s in settings}))
            del inp
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
