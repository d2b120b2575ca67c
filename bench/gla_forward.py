"""Simple GLA forward (per-head scalar decay): QLA (qla.chunk_simple_gla,
kernels/gla/gla_fwd.qla) against FLA's Triton chunk_simple_gla
(fla.ops.simple_gla), side by side in one process.

Run on the H200 on 2026-12-01: 7 of its 9 rows (docs/tutorial.md, "GPU
results"; the two packed rows did not finish inside that run's time limit).

Timing: per row and per implementation, 3 warm-up calls, then `--calls` calls
captured in one CUDA graph, replayed `--replays` times; the time of a call is
the median replay time / calls (bench/timing.py; falls back to CUDA-event
timing of eager calls, marked in the output, if capture fails). Both get the
same tensors: q, k = F.normalize(randn) (--dtype), v = randn, g =
logsigmoid(randn) f32 [B, T, H], scale K^-0.5, output_final_state=True, no
initial state (--h0 adds one). Rows "BxT" are fixed-length batches; rows
"a+b+c" are packed sequences (B = 1, int64 cu_seqlens). --check compares both
outputs with each other (rms relative, o and the final state).

    PYTHONPATH=python:/path/to/fla_src QLA_LIBRARY=build/compiler/libqla.so \\
        python3 bench/gla_forward.py [--rows 1x4096,8x2048,...] [--heads 16] [--K 128 --V 128] [--check]

Writes gla_forward_<date>.json and .md in bench/results/ and prints the markdown table.
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, ROOT)
DEFAULT_ROWS = "1x4096,1x16384,1x32768,4x4096,8x2048,16x1024,32x512,1500+411+100+64+15+1,8192+4096+2048+1024"


def parse_row(s):
    """'8x2048' -> (B=8, T=2048, None); '1500+411' -> (1, 1911, [1500, 411])."""
    if "+" in s:
        lens = [int(x) for x in s.split("+")]
        return dict(name=s, B=1, T=sum(lens), lens=lens)
    b, t = (int(x) for x in s.split("x"))
    return dict(name=s, B=b, T=t, lens=None)


def make_inputs(torch, F, r, args, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[args.dtype]
    B, T, H, K, V = r["B"], r["T"], args.heads, args.K, args.V

    def randn(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.float32, generator=gen)

    q = F.normalize(randn(B, T, H, K), p=2, dim=-1).to(dt)
    k = F.normalize(randn(B, T, H, K), p=2, dim=-1).to(dt)
    v = randn(B, T, H, V).to(dt)
    g = F.logsigmoid(randn(B, T, H))
    cu = None
    N = B
    if r["lens"]:
        offs = [0]
        for L in r["lens"]:
            offs.append(offs[-1] + L)
        cu = torch.tensor(offs, dtype=torch.int64, device="cuda")
        N = len(r["lens"])
    h0 = randn(N, H, K, V) if args.h0 else None
    return dict(q=q, k=k, v=v, g=g, cu_seqlens=cu, initial_state=h0)


def make_call(fn, inp):
    def call():
        return fn(inp["q"], inp["k"], inp["v"], inp["g"], scale=None, initial_state=inp["initial_state"],
                  output_final_state=True, cu_seqlens=inp["cu_seqlens"])
    return call


def measure(torch, fn, args):
    """(ms, method, error)"""
    from timing import time_eager, time_graph
    try:
        ms, _ = time_graph(fn, calls=args.calls, replays=args.replays)
        return ms, "graph", None
    except Exception as e:  # noqa: BLE001
        why = f"{type(e).__name__}: {str(e).strip()[:200]}"
        torch.cuda.synchronize()
    try:
        ms, _ = time_eager(fn, calls=args.calls, reps=args.replays, warmup=3)
        return ms, f"eager (graph capture failed: {why})", None
    except Exception as e:  # noqa: BLE001
        return None, None, f"{type(e).__name__}: {str(e).strip()[:300]}"


def rms_rel(a, b):
    d = (a.double() - b.double()).pow(2).mean().sqrt().item()
    n = b.double().pow(2).mean().sqrt().item()
    return d / n if n else d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default=DEFAULT_ROWS)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--K", type=int, default=128)
    ap.add_argument("--V", type=int, default=128)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    ap.add_argument("--h0", action="store_true")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--replays", type=int, default=15)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-fla", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "results"))
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    try:
        import qla
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(ROOT), "python"))
        import qla
    fla = None
    info = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "qla_module": os.path.dirname(qla.__file__)}
    if not args.no_fla:
        os.environ.setdefault("FLA_TILELANG", "0")
        import fla as fla_pkg
        from fla.ops.simple_gla import chunk_simple_gla as fla
        info["fla_version"] = getattr(fla_pkg, "__version__", "?")
        info["fla_path"] = os.path.dirname(os.path.abspath(fla_pkg.__file__))

    results = []
    for s in args.rows.split(","):
        r = parse_row(s.strip())
        inp = make_inputs(torch, F, r, args, args.seed)
        row = dict(row=r["name"], B=r["B"], T=r["T"], H=args.heads, K=args.K, V=args.V, dtype=args.dtype)
        ours = make_call(qla.chunk_simple_gla, inp)
        o_q, h_q = ours()
        torch.cuda.synchronize()
        row["qla_ms"], row["qla_method"], row["qla_error"] = measure(torch, ours, args)
        if fla is not None:
            theirs = make_call(fla, inp)
            o_f, h_f = theirs()
            torch.cuda.synchronize()
            row["fla_ms"], row["fla_method"], row["fla_error"] = measure(torch, theirs, args)
            if row["qla_ms"] and row["fla_ms"]:
                row["speedup_vs_fla"] = row["fla_ms"] / row["qla_ms"]
            if args.check:
                row["o_rms_rel_vs_fla"] = rms_rel(o_q, o_f)
                row["ht_rms_rel_vs_fla"] = rms_rel(h_q, h_f.float())
        results.append(row)
        print(json.dumps(row), flush=True)

    os.makedirs(args.out_dir, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d")
    base = os.path.join(args.out_dir, f"gla_forward_{stamp}")
    with open(base + ".json", "w") as f:
        json.dump(dict(info=info, args=vars(args), rows=results), f, indent=1)
    lines = [f"simple GLA forward, {info['device']}, H={args.heads} K={args.K} V={args.V} {args.dtype}, "
             f"CUDA-graph median of {args.replays} replays x {args.calls} calls", "",
             "| row | QLA ms | FLA ms | FLA / QLA |" + (" o vs FLA | ht vs FLA |" if args.check else ""),
             "|---|---|---|---|" + ("---|---|" if args.check else "")]
    for r in results:
        f = lambda k, spec: format(r[k], spec) if r.get(k) is not None else "-"  # noqa: E731
        line = f"| {r['row']} | {f('qla_ms', '.3f')} | {f('fla_ms', '.3f')} | {f('speedup_vs_fla', '.2f')} |"
        if args.check:
            line += f" {f('o_rms_rel_vs_fla', '.1e')} | {f('ht_rms_rel_vs_fla', '.1e')} |"
        lines.append(line)
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
