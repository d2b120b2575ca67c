"""The backward's error tail on one-token sequences, QLA beside FLA and
FlashQLA: over --seeds seeds, the conformance suite's first backward case
(test/gpu/test_gdn_backward.py: B = 2, T = 1, 2/4 heads, K = V = 128, bf16, an
initial state, no dht; its inputs and its float64 autograd reference), and
the same at T = 64 as a control, every gradient's rms-relative error per
implementation; prints each gradient's median, 90th percentile and maximum
over the seeds and how many seeds are over GDN.md's bar.

    PYTHONPATH=python:/path/to/fla_src[:/path/to/flashqla_site] QLA_LIBRARY=build/compiler/libqla.so \\
        python3 bench/gdn_bwd_tail.py [--seeds 100] [--T 1,64] [--impls qla,fla,flashqla] [--json OUT]

An implementation that does not import, or raises on these inputs, is listed
as skipped with the reason.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--T", default="1,64")
    ap.add_argument("--impls", default="qla,fla,flashqla")
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        print("SKIP: no GPU (torch.cuda.is_available() is False)")
        return 0
    import test_gdn_backward as tb
    import test_gdn_forward as fw

    tb.torch = fw.torch = torch
    fw.F = F
    fw.DTYPES.update(bf16=torch.bfloat16, f16=torch.float16, f32=torch.float32)
    impls, skipped = {}, {}
    for name in args.impls.split(","):
        try:
            if name == "qla":
                import qla
                impls[name] = qla.chunk_gated_delta_rule
            elif name == "fla":
                os.environ.setdefault("FLA_FLASH_QLA", "0")
                os.environ.setdefault("FLA_TILELANG", "0")
                os.environ["QLA_FLA_BACKEND"] = "0"
                import fla.ops.common.chunk_o as fco
                fco.TRITON_ABOVE_3_7_1 = True
                from fla.ops.gated_delta_rule import chunk_gated_delta_rule
                impls[name] = chunk_gated_delta_rule
            elif name == "flashqla":
                import anchors
                lib, why = anchors.import_flashqla()
                if lib is None:
                    raise ImportError(why)
                impls[name] = anchors.flashqla_autograd_fn(lib)
            else:
                sys.exit(f"unknown implementation {name}")
        except Exception as e:  # noqa: BLE001
            skipped[name] = f"{type(e).__name__}: {str(e)[:200]}"

    def grads(fn, inp, do, dht, packed):
        """fn's gradients of <do, o> (+ <dht, ht>); packed: the B sequences of
        T tokens as one varlen batch (B = 1, cu_seqlens), the gradients
        reshaped back."""
        B, T = inp["B"], inp["T"]
        leaves = {n: inp[n].detach().clone().requires_grad_() for n in ("q", "k", "v", "g", "beta", "initial_state")}
        x = {n: leaves[n] for n in ("q", "k", "v", "g", "beta")}
        cu = None
        if packed:
            x = {n: t.reshape(1, B * T, *t.shape[2:]) for n, t in x.items()}
            cu = torch.arange(0, B * T + 1, T, dtype=torch.int32, device="cuda")
        o, ht = fn(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=leaves["initial_state"],
                   output_final_state=dht is not None, cu_seqlens=cu)
        outs, gs = [o], [do.reshape(o.shape)]
        if dht is not None:
            outs.append(ht)
            gs.append(dht)
        torch.autograd.backward(outs, gs)
        g = {"d" + n: leaves[n].grad for n in ("q", "k", "v", "g", "beta")}
        g["dh0"] = leaves["initial_state"].grad
        return g

    res = dict(gpu=torch.cuda.get_device_name(), command="python3 " + " ".join(sys.argv), skipped=skipped, runs=[])
    for name, why in skipped.items():
        print(f"SKIP {name}: {why}")
    for T in (int(t) for t in args.T.split(",")):
        case = dict(B=2, T=T, Hqk=2, Hv=4, K=128, V=128, dtype="bf16", h0=True, dht=False)
        errs = {n: {g: [] for g in tb.NAMES} for n in impls}
        packed = {n: False for n in impls}
        for seed in range(args.seeds):
            gen = torch.Generator(device="cuda").manual_seed(seed)
            inp, do, dht = tb.make_case_inputs(case, gen)
            ref = tb.grads_ref(case, inp, do, dht)
            for n, fn in impls.items():
                try:
                    got = grads(fn, inp, do, dht, packed[n])
                except Exception:  # noqa: BLE001  (dense B > 1 refused: the same sequences packed)
                    if packed[n]:
                        raise
                    packed[n] = True
                    got = grads(fn, inp, do, dht, True)
                for gname in tb.NAMES:
                    errs[n][gname].append(fw.rms_rel(got[gname], ref[gname]))
        print(f"\nB = 2, T = {T}, 2/4 heads, K = V = 128, bf16, h0, no dht; {args.seeds} seeds (0..{args.seeds - 1}); "
              "rms-relative error vs float64: median / 90th percentile / max (seeds over the bar)")
        print(f"  {'impl':9s} " + " ".join(f"{g:>26s}" for g in tb.NAMES))
        for n in impls:
            cells = []
            for gname in tb.NAMES:
                xs = sorted(errs[n][gname])
                over = sum(x > tb.BARS[gname] for x in xs)
                cells.append(f"{xs[len(xs) // 2]:.1e}/{xs[int(0.9 * (len(xs) - 1))]:.1e}/{xs[-1]:.1e} ({over:2d})")
            print(f"  {n + ('*' if packed[n] else ''):9s} " + " ".join(f"{c:>26s}" for c in cells), flush=True)
            res["runs"].append(dict(T=T, impl=n, packed=packed[n], errors=errs[n]))
        if any(packed.values()):
            print("  (* the two sequences packed as one varlen batch: dense B > 1 was refused)")
    print("\nbars: " + ", ".join(f"{g} {tb.BARS[g]}" for g in tb.NAMES))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
