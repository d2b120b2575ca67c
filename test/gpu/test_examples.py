"""GPU checks of the example kernels against float64 references on fresh
random inputs, outputs poisoned with NaN first. Needs PyTorch with CUDA and
libqla.so (QLA_LIBRARY or the build tree); prints SKIP without a GPU.

    PYTHONPATH=python python3 test/gpu/test_examples.py
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rms_rel(out, ref):
    d = out.double() - ref.double()
    return (d.pow(2).mean().sqrt() / ref.double().pow(2).mean().sqrt()).item()


def main():
    try:
        import torch
    except ImportError:
        print("SKIP: PyTorch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("SKIP: no GPU (torch.cuda.is_available() is False)")
        return 0
    import qla

    seed = int(time.time() * 1000) % 100000
    gen = torch.Generator(device="cuda").manual_seed(seed)
    print(f"seed {seed}, {torch.cuda.get_device_name()}")
    failures = 0

    def report(name, err, bar, out):
        nonlocal failures
        nan = bool(torch.isnan(out).any().item())
        ok = err <= bar and not nan
        failures += 0 if ok else 1
        print(f"  {name:40s} rms_rel={err:.2e} (bar {bar:.0e}){' NaN!' if nan else ''}  {'PASS' if ok else 'FAIL'}")

    # (b) RMSNorm: y = x * rsqrt(mean(x^2) + eps) * w
    k = qla.compile(os.path.join(ROOT, "examples", "rmsnorm.qla"))
    for rows in (64, 1, 100, 333, 4096):
        x = torch.randn(rows, 128, device="cuda", generator=gen).to(torch.bfloat16)
        w = torch.randn(128, device="cuda", generator=gen).to(torch.bfloat16)
        y = torch.full_like(x, float("nan"))
        k(x, w, y)
        torch.cuda.synchronize()
        xd = x.double()
        ref = xd * torch.rsqrt(xd.pow(2).mean(dim=1, keepdim=True) + 1e-6) * w.double()
        report(f"rmsnorm R={rows}", rms_rel(y, ref), 1e-2, y)

    # (c) chunk attention with a register-sourced second gemm
    k = qla.compile(os.path.join(ROOT, "examples", "chunk_attention.qla"))
    for t in (64, 65, 200, 1000, 4096):
        q, kk, v = (torch.randn(t, 128, device="cuda", generator=gen).to(torch.bfloat16) for _ in range(3))
        o = torch.full_like(q, float("nan"))
        scale = 128 ** -0.5
        k(q, kk, v, o, scale)
        torch.cuda.synchronize()
        ref = torch.empty(t, 128, dtype=torch.float64, device="cuda")
        for c0 in range(0, t, 64):
            c1 = min(t, c0 + 64)
            s = (q[c0:c1].double() @ kk[c0:c1].double().T) * scale
            s = torch.tril(s)
            ref[c0:c1] = s @ v[c0:c1].double()
        report(f"chunk_attention T={t}", rms_rel(o, ref), 1e-2, o)

    # (d) transposed copies: X -> f^T (global -> fragment), f^T -> bf16 shared
    # (stmatrix .trans) -> Y by rows, f^T -> Z (f32 global), f -> W untransposed.
    # Pure data movement: checked exactly (bf16 rounding is round-to-nearest-even
    # on both sides), NaN-poisoned outputs must be fully overwritten.
    def report_exact(name, out, ref):
        nonlocal failures
        nan = bool(torch.isnan(out).any().item())
        bad = int((out != ref).sum().item())
        ok = bad == 0 and not nan
        failures += 0 if ok else 1
        print(f"  {name:40s} mismatches={bad}{' NaN!' if nan else ''}  {'PASS' if ok else 'FAIL'}")

    k = qla.compile(os.path.join(ROOT, "examples", "transpose_copy.qla"))
    for rows in (128, 256, 200, 1, 1000):
        x = torch.randn(rows, 64, device="cuda", generator=gen)
        y = torch.full((rows, 64), float("nan"), device="cuda", dtype=torch.bfloat16)
        z = torch.full((rows, 64), float("nan"), device="cuda", dtype=torch.float32)
        w = torch.full((64, rows), float("nan"), device="cuda", dtype=torch.float32)
        k(x, y, z, w)
        torch.cuda.synchronize()
        report_exact(f"transpose_copy R={rows} Y=bf16(X)", y, x.to(torch.bfloat16))
        report_exact(f"transpose_copy R={rows} Z=X", z, x)
        report_exact(f"transpose_copy R={rows} W=X^T", w, x.T)

    # (e) channels between compute roles: inp (TMA) has two consumer roles,
    # mid is filled from aux's registers; 5 steps per block wrap the depth-2
    # rings, T=1000 and T=321 end inside a block's steps (clipped chunks).
    k = qla.compile(os.path.join(ROOT, "examples", "compute_channel.qla"))
    for t in (320, 321, 1000, 4096):
        x = torch.randn(t, 64, device="cuda", generator=gen).to(torch.bfloat16)
        y = torch.full((t, 64), float("nan"), device="cuda")
        scale = 64 ** -0.5
        k(x, y, scale)
        torch.cuda.synchronize()
        ref = torch.empty(t, 64, dtype=torch.float64, device="cuda")
        for c0 in range(0, t, 64):
            xc = x[c0:c0 + 64].double()
            m = ((xc @ xc.T) * scale).to(torch.bfloat16).double()  # aux stores bf16
            ref[c0:c0 + 64] = m @ xc
        report(f"compute_channel T={t}", rms_rel(y, ref), 1e-2, y)

    # (f) partial waits in a role (`partial_waits`): a later product issued
    # while an earlier one is in flight, waits at first use, Z stored one
    # chunk late; T=257 and T=1000 end inside a chunk and inside a block.
    k = qla.compile(os.path.join(ROOT, "examples", "overlap_products.qla"))
    for t in (64, 256, 257, 1000, 4096):
        x = torch.randn(t, 64, device="cuda", generator=gen).to(torch.bfloat16)
        a, b = (torch.randn(64, 64, device="cuda", generator=gen).mul(0.125).to(torch.bfloat16) for _ in range(2))
        y = torch.full((t, 64), float("nan"), device="cuda")
        z = torch.full((t, 64), float("nan"), device="cuda", dtype=torch.bfloat16)
        k(x, a, b, y, z)
        torch.cuda.synchronize()
        xd, ad, bd = x.double(), a.double(), b.double()
        ref_y = 2 * (xd @ ad.T).to(torch.bfloat16).double() @ bd.T  # the kernel casts X Aᵀ to bf16
        report(f"overlap_products T={t} Y", rms_rel(y, ref_y), 1e-2, y)
        report(f"overlap_products T={t} Z", rms_rel(z, xd @ bd), 1e-2, z)

    print("ALL PASS" if failures == 0 else f"{failures} FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
