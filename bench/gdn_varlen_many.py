"""QLA's GDN forward and forward + backward on packed batches of many
sequences (B = 1, int32 cu_seqlens): the case where each chunk-parallel
kernel has to find its block's sequence among N of them. QLA only; compare
builds by running this once per library (QLA_LIBRARY=...) and reading the
tagged lines side by side.

Inputs as FlashQLA's benchmark makes them (bench/gdn_backward.py): an initial
state, q, k = F.normalize(randn) bf16, v = randn bf16, g = logsigmoid(randn)/16
f32 with a quarter of the v-heads at g = 0, beta = sigmoid(randn) f32, final
state out; do, dht randn. Forward: CUDA-graph replay, median (bench/timing.py), as the
cost model picks and on the two-kernel path (QLA_GDN_FUSED=0).
Forward + backward: one autograd step, eager, CUDA events, median of --reps
over --steps steps after 2 warm-up steps.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so \\
        python3 bench/gdn_varlen_many.py [--cases 4/16:256x128,4/16:64x512] [--tag NAME]

A case is HQK/HV:NxL (N sequences of L tokens) or HQK/HV:L1+L2+... .
"""
import argparse
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

DEFAULT_CASES = "4/16:256x128,4/16:64x512,4/16:8x4096,16/32:512x64,16/32:32x1024"


def parse_case(text):
    heads, lay = text.split(":")
    hqk, hv = (int(x) for x in heads.split("/"))
    if "x" in lay:
        n, length = (int(x) for x in lay.split("x"))
        lens = [length] * n
    else:
        lens = [int(x) for x in lay.split("+")]
    return hqk, hv, lens


def make_inputs(torch, F, hqk, hv, lens, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    T, K, V, dev, bf = sum(lens), 128, 128, "cuda", torch.bfloat16

    def rn(*s, dtype=torch.float32):
        return torch.randn(*s, generator=g, device=dev, dtype=torch.float32).to(dtype)
    q = F.normalize(rn(1, T, hqk, K), dim=-1).to(bf)
    k = F.normalize(rn(1, T, hqk, K), dim=-1).to(bf)
    v = rn(1, T, hv, V, dtype=bf)
    gg = F.logsigmoid(rn(1, T, hv)) / 16
    gg[:, :, : hv // 4] = 0
    beta = torch.sigmoid(rn(1, T, hv))
    h0 = rn(len(lens), hv, K, V)
    cu = torch.tensor([0] + list(itertools.accumulate(lens)), device=dev, dtype=torch.int32)
    do = rn(1, T, hv, V, dtype=bf)
    dht = rn(len(lens), hv, K, V)
    return dict(q=q, k=k, v=v, g=gg, beta=beta, h0=h0, cu=cu, do=do, dht=dht)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=DEFAULT_CASES)
    ap.add_argument("--tag", default="")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-backward", action="store_true")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import qla
    from timing import time_eager, time_graph

    for i, text in enumerate(args.cases.split(",")):
        hqk, hv, lens = parse_case(text)
        x = make_inputs(torch, F, hqk, hv, lens, 1234 + i)

        def fwd():
            return qla.chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=x["h0"],
                                              output_final_state=True, cu_seqlens=x["cu"])
        fwd()
        torch.cuda.synchronize()
        f_ms, _ = time_graph(fwd, calls=5, replays=10)
        saved = os.environ.get("QLA_GDN_FUSED")
        os.environ["QLA_GDN_FUSED"] = "0"
        t_ms, _ = time_graph(fwd, calls=5, replays=10)
        if saved is None:
            del os.environ["QLA_GDN_FUSED"]
        else:
            os.environ["QLA_GDN_FUSED"] = saved
        line = (f"[{args.tag}] {hqk}/{hv} N={len(lens)} T={sum(lens)}: forward {f_ms:.3f} ms "
                f"(two-kernel path {t_ms:.3f})")
        if not args.no_backward:
            leaves = [t.detach().clone().requires_grad_() for t in (x["q"], x["k"], x["v"], x["g"], x["beta"], x["h0"])]

            def step():
                o, ht = qla.chunk_gated_delta_rule(*leaves[:5], initial_state=leaves[5], output_final_state=True,
                                                   cu_seqlens=x["cu"])
                torch.autograd.backward([o, ht], [x["do"], x["dht"]])
                for t in leaves:
                    t.grad = None
            b_ms, _ = time_eager(step, calls=args.steps, reps=args.reps)
            line += f"  forward + backward {b_ms:.3f} ms"
        print(line, flush=True)
        del x
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
