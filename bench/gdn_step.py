"""QLA's GDN training step alone (qla.chunk_gated_delta_rule forward +
torch.autograd backward on o and the final state), for A/B runs of QLA
builds (one process per libqla, QLA_LIBRARY=...) where FLA's autotune would
cost more device time than the measurement. Side-by-side ratios against FLA
and FlashQLA are bench/gdn_backward.py's.

Inputs as FlashQLA's backward benchmark (and bench/gdn_backward.py): one
sequence with int32 cu_seqlens [0, T], an initial state (randn f32),
q, k = F.normalize(randn) bf16, v = randn bf16, g = logsigmoid(randn) / 16 f32
with a quarter of the v-heads at g = 0, beta = sigmoid(randn) f32, final
state out; do = randn bf16, dht = randn f32. Timing: eager (QLA's varlen
path reads cu_seqlens on the host), CUDA events, 2 warm-up steps, median of
--reps groups of --steps steps. Prints the step time and the sum of |grad|
over q, k, v and h0 after every step ran (equal builds agree to rounding).

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 bench/gdn_step.py \\
        [--shapes 2/4/32768,16/32/8192] [--tag NAME]
"""
import argparse


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="2/4/32768,4/8/32768,8/16/8192,16/32/8192",
                    help="Hqk/Hv/T, comma-separated (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tag", default="qla")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    from qla.gdn import chunk_gated_delta_rule as gdr

    dev = "cuda"
    for spec in args.shapes.split(","):
        H, HV, T = (int(x) for x in spec.split("/"))
        torch.manual_seed(0)
        q = F.normalize(torch.randn(1, T, H, 128, device=dev), dim=-1).bfloat16().requires_grad_()
        k = F.normalize(torch.randn(1, T, H, 128, device=dev), dim=-1).bfloat16().requires_grad_()
        v = torch.randn(1, T, HV, 128, device=dev).bfloat16().requires_grad_()
        g = F.logsigmoid(torch.randn(1, T, HV, device=dev)) / 16
        g[:, :, : HV // 4] = 0
        g.requires_grad_()
        beta = torch.sigmoid(torch.randn(1, T, HV, device=dev)).requires_grad_()
        h0 = torch.randn(1, HV, 128, 128, device=dev).requires_grad_()
        cu = torch.tensor([0, T], dtype=torch.int32, device=dev)
        do = torch.randn(1, T, HV, 128, device=dev).bfloat16()
        dht = torch.randn(1, HV, 128, 128, device=dev)

        def step():
            o, ht = gdr(q, k, v, g, beta, initial_state=h0, output_final_state=True, cu_seqlens=cu)
            torch.autograd.backward([o, ht], [do, dht])

        for _ in range(2):
            step()
        torch.cuda.synchronize()
        ts = []
        for _ in range(args.reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(args.steps):
                step()
            b.record()
            torch.cuda.synchronize()
            ts.append(a.elapsed_time(b) / args.steps)
        ts.sort()
        gsum = float(sum(t.grad.float().abs().sum() for t in (q, k, v, h0)))
        print(f"[{args.tag}] hk{H}_hv{HV} T={T}: fwd+bwd {ts[len(ts) // 2]:.3f} ms  (grad abs sum {gsum:.6e})",
              flush=True)


if __name__ == "__main__":
    main()
