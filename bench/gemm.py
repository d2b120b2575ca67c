"""GEMM example on the GPU: correctness on fresh random inputs over several
shapes (incl. ones that are not multiples of the tile), throughput against
torch.matmul (cuBLAS) side by side, and cold vs warm JIT build (disk cache).

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 bench/gemm.py [--json OUT]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

import qla
from timing import time_graph

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEMM = os.path.join(ROOT, "examples", "gemm.qla")


def rms_rel(out, ref):
    d = (out.double() - ref.double())
    return (d.pow(2).mean().sqrt() / ref.double().pow(2).mean().sqrt()).item()


def check(k, m, n, kk, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, kk, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, kk, device="cuda", dtype=torch.bfloat16, generator=g)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    k(a, b, c)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().T
    err = rms_rel(c, ref)
    nan = torch.isnan(c).any().item()
    return err, nan


def build_in_subprocess(cache_dir):
    code = ("import qla,json,sys; k=qla.compile(sys.argv[1]); "
            "print(json.dumps({'cache': k.cache, 'seconds': k.build_seconds}))")
    env = dict(os.environ, QLA_CACHE_DIR=cache_dir)
    t0 = time.time()
    out = subprocess.run([sys.executable, "-c", code, GEMM], env=env, capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["process_seconds"] = time.time() - t0
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--size", type=int, default=8192)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.cuda.get_device_name()
    res = {"device": dev, "date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv)}

    with tempfile.TemporaryDirectory() as d:
        cold = build_in_subprocess(d)
        warm = build_in_subprocess(d)
    res["build_cold"], res["build_warm"] = cold, warm
    print(f"JIT build: cold {cold['seconds']*1e3:.0f} ms ({cold['cache']}), "
          f"warm {warm['seconds']*1e3:.0f} ms ({warm['cache']})")

    kernels = {"gemm.qla": qla.compile(GEMM),
               "gemm_pipelined.qla": qla.compile(os.path.join(ROOT, "examples", "gemm_pipelined.qla"))}
    shapes = [(128, 256, 64), (256, 512, 128), (1000, 777, 520), (129, 257, 72), (3000, 1100, 4104),
              (4096, 4096, 4096), (1, 300, 64)]
    res["correctness"] = []
    ok = True
    for name, k in kernels.items():
        for i, (m, n, kk) in enumerate(shapes):
            err, nan = check(k, m, n, kk, seed=1000 + i + int(time.time()) % 1000)
            good = (err < 1e-2) and not nan
            ok &= good
            res["correctness"].append({"kernel": name, "M": m, "N": n, "K": kk, "rms_rel": err, "nan": nan,
                                       "pass": good})
            print(f"  {name:20s} M={m:5d} N={n:5d} K={kk:5d}  rms_rel={err:.2e}  {'PASS' if good else 'FAIL'}")

    S = args.size
    a = torch.randn(S, S, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(S, S, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(S, S, device="cuda", dtype=torch.bfloat16)
    c2 = torch.empty(S, S, device="cuda", dtype=torch.bfloat16)
    flops = 2.0 * S * S * S
    res["perf"] = []
    for name, k in kernels.items():
        t_q, _ = time_graph(lambda: k(a, b, c))
        t_t, _ = time_graph(lambda: torch.matmul(a, b.T, out=c2))
        err = rms_rel(c, c2.float())
        res["perf"].append({"kernel": name, "M": S, "N": S, "K": S, "qla_ms": t_q, "torch_ms": t_t,
                            "qla_tflops": flops / t_q / 1e9, "torch_tflops": flops / t_t / 1e9,
                            "ratio": t_t / t_q, "rms_rel_vs_torch": err})
        print(f"{name:20s} {S}^3 bf16: QLA {t_q:.3f} ms ({flops/t_q/1e9:.0f} TFLOP/s)  torch.matmul {t_t:.3f} ms "
              f"({flops/t_t/1e9:.0f} TFLOP/s)  QLA/cuBLAS = {t_t/t_q:.1%}  (rms vs torch {err:.1e})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    print("ALL PASS" if ok else "SOME FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
