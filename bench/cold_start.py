"""A fresh process's first prefill and first decode, with an empty kernel
cache, with a warm one, and from a prebuilt folder (issue 29, "No cold
start"; docs/gdn.md). Each measurement is a new Python process that imports
qla and torch, makes the inputs, and times (wall clock, after
torch.cuda.synchronize) its first `qla.gdn.prefill` (varlen, a bf16 pool)
and then its first `qla.gdn.recurrent` (decode, vLLM's raw gating), then a
second call of each (the steady state, for reference).

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 bench/cold_start.py [--heads 16/32] [--out FILE.json]

Cases, each in fresh processes (median of --repeat):
  empty      QLA_CACHE_DIR an empty folder: every kernel is compiled (NVRTC)
  warm       the same folder after `empty` filled it (disk-cache hits)
  prebuilt   an empty QLA_CACHE_DIR and QLA_PREBUILT_DIRS = a folder that
             `python -m qla warmup --serving --cache-dir` filled beforehand
Prints SKIP and exits 0 without PyTorch or an sm_90 GPU.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
t_start = time.perf_counter()
import torch
import qla, qla.gdn as G
Hqk, Hv, K, V = (int(x) for x in sys.argv[1:5])
dev = "cuda"
torch.cuda.init()
torch.zeros(1, device=dev)
t_ready = time.perf_counter()
gen = torch.Generator(device=dev).manual_seed(0)
lens = [300, 1000, 64, 2700]
T, N = sum(lens), len(lens)
cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device=dev)
q = torch.randn(1, T, Hqk, K, generator=gen, device=dev).to(torch.bfloat16)
k = torch.nn.functional.normalize(torch.randn(1, T, Hqk, K, generator=gen, device=dev), dim=-1).to(torch.bfloat16)
v = torch.randn(1, T, Hv, V, generator=gen, device=dev).to(torch.bfloat16)
g = torch.nn.functional.logsigmoid(torch.randn(1, T, Hv, generator=gen, device=dev))
beta = torch.sigmoid(torch.randn(1, T, Hv, generator=gen, device=dev))
pool = torch.zeros(2 * N, Hv, V, K, dtype=torch.bfloat16, device=dev)
si = torch.arange(N, dtype=torch.int32, device=dev)
so = si + N
qd, kd = (torch.randn(N, 1, Hqk, K, generator=gen, device=dev).to(torch.bfloat16) for _ in range(2))
vd = torch.randn(N, 1, Hv, V, generator=gen, device=dev).to(torch.bfloat16)
a, b = (torch.randn(N, 1, Hv, generator=gen, device=dev).to(torch.bfloat16) for _ in range(2))
A_log, dt_bias = torch.randn(Hv, device=dev), torch.randn(Hv, device=dev)
wi = so[:, None].contiguous()
torch.cuda.synchronize()
def timed(f):
    t0 = time.perf_counter()
    f()
    torch.cuda.synchronize()
    return time.perf_counter() - t0
pre = lambda: G.prefill(q, k, v, g, beta, pool, si, so, cu_seqlens=cu)
dec = lambda: G.recurrent(qd, kd, vd, a, b, pool, so, wi, use_gate_in_kernel=True, A_log=A_log,
                          dt_bias=dt_bias, use_beta_sigmoid_in_kernel=True)
out = {"import_and_context_s": t_ready - t_start, "first_prefill_s": timed(pre), "first_decode_s": timed(dec),
       "second_prefill_s": timed(pre), "second_decode_s": timed(dec)}
print("RESULT " + json.dumps(out))
"""


def run_child(env, heads):
    hq, hv = heads
    p = subprocess.run([sys.executable, "-c", CHILD, str(hq), str(hv), "128", "128"], env=env, capture_output=True,
                       text=True, timeout=600)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"child failed (exit {p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heads", default="16/32", help="Hqk/Hv (default 16/32), K = V = 128")
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per case (median)")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIP: no PyTorch")
        return 0
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        print("SKIP: no sm_90 GPU")
        return 0
    heads = tuple(int(x) for x in args.heads.split("/"))
    base = {k: v for k, v in os.environ.items() if k not in ("QLA_CACHE_DIR", "QLA_PREBUILT_DIRS")}
    tmp = tempfile.mkdtemp(prefix="qla-cold-")
    results = {}
    try:
        def case(name, env_of):
            runs = [run_child(env_of(i), heads) for i in range(args.repeat)]
            results[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            r = results[name]
            print(f"{name:9s} first prefill {r['first_prefill_s'] * 1e3:9.1f} ms  first decode "
                  f"{r['first_decode_s'] * 1e3:8.1f} ms  (second: {r['second_prefill_s'] * 1e3:.2f} / "
                  f"{r['second_decode_s'] * 1e3:.2f} ms; import + context {r['import_and_context_s']:.2f} s)",
                  flush=True)

        def fresh_cache(i):
            d = os.path.join(tmp, f"empty{i}")
            shutil.rmtree(d, ignore_errors=True)
            return dict(base, QLA_CACHE_DIR=d)
        case("empty", fresh_cache)
        warm = os.path.join(tmp, "empty0")  # what the first `empty` process compiled into
        case("warm", lambda i: dict(base, QLA_CACHE_DIR=warm))
        pre = os.path.join(tmp, "prebuilt")
        w = subprocess.run([sys.executable, "-m", "qla", "warmup", "--serving", "--head-dim", "128",
                            "--cache-dir", pre], env=base, capture_output=True, text=True, timeout=900)
        print("warmup: " + (w.stdout.strip().splitlines() or ["(no output)"])[-1])
        if w.returncode != 0:
            raise RuntimeError(w.stdout + w.stderr)
        case("prebuilt", lambda i: dict(base, QLA_CACHE_DIR=os.path.join(tmp, f"pb-empty{i}"), QLA_PREBUILT_DIRS=pre))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"heads": args.heads, "K": 128, "V": 128, "repeat": args.repeat, "results": results}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
