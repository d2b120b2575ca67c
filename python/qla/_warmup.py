"""`python -m qla warmup` (qla/__main__.py dispatches here; a module of its
own so that the worker processes, started fresh, can import what they run).
The docstring of qla/__main__.py says what it compiles."""
from __future__ import annotations

import argparse
import os
import sys
import time


def configurations(serving: bool, training: bool, dtype: str, heads, k_first_pool: bool = False,
                   prefix_caching: bool = False):
    """(label, function name in qla.gdn, kwargs) for every configuration."""
    out = []
    layout = " K-first" if k_first_pool else ""
    ckpt = " checkpoints" if prefix_caching else ""
    for K, V in heads:
        hd = f"K={K} V={V}"
        if serving:
            for pool in ("f32", "bf16"):
                for l2 in (False, True):
                    for beta in ("f32", dtype):
                        out.append((f"prefill {dtype} {hd} pool={pool}{layout}{ckpt} l2norm={int(l2)} beta={beta}",
                                    "warmup",
                                    dict(dtype=dtype, K=K, V=V, beta_dtype=beta, varlen=True, cu_dtype="i32",
                                         use_qk_l2norm=l2, pool=pool, pool_k_first=k_first_pool,
                                         pool_checkpoints=prefix_caching)))
                out.append((f"decode {dtype} {hd} pool={pool}{layout} raw gate and beta ({dtype})", "warmup_recurrent",
                            dict(dtype=dtype, K=K, V=V, state_dtype=pool, g_dtype=dtype, beta_dtype=dtype,
                                 use_qk_l2norm=True, use_beta_sigmoid_in_kernel=True, use_gate_in_kernel=True,
                                 pool_k_first=k_first_pool)))
                out.append((f"decode {dtype} {hd} pool={pool}{layout} g and beta given (f32)", "warmup_recurrent",
                            dict(dtype=dtype, K=K, V=V, state_dtype=pool, use_qk_l2norm=True,
                                 pool_k_first=k_first_pool)))
        if training:
            out.append((f"training {dtype} {hd} transformers Qwen3.5 (l2norm, beta {dtype})", "warmup",
                        dict(dtype=dtype, K=K, V=V, beta_dtype=dtype, use_qk_l2norm=True, backward=True)))
            out.append((f"training {dtype} {hd} FLA GatedDeltaNet (gate, beta sigmoid, V-first)", "warmup",
                        dict(dtype=dtype, K=K, V=V, g_dtype=dtype, beta_dtype=dtype, use_qk_l2norm=True,
                             use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True, state_v_first=True,
                             backward=True)))
            out.append((f"training {dtype} {hd} Megatron packed (varlen)", "warmup",
                        dict(dtype=dtype, K=K, V=V, varlen=True, cu_dtype="i32", backward=True)))
    return out


def _compile_one(fn: str, kwargs: dict):
    """Runs in a worker process: (seconds, error text or None)."""
    from . import QlaError, gdn
    t0 = time.perf_counter()
    try:
        getattr(gdn, fn)(**kwargs)
        return time.perf_counter() - t0, None
    except QlaError as e:
        return time.perf_counter() - t0, str(e)


def _entries(folder: str) -> int:
    try:
        return sum(1 for n in os.listdir(folder) if n.endswith(".qlak"))
    except OSError:
        return 0


def head_dims(text: str):
    heads = []
    for part in text.split(","):
        k, _, v = part.strip().partition("x")
        try:
            K, V = int(k), int(v or k)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{part}' is not K or KxV (64, 128, 128x64, ...)")
        if K not in (64, 128, 256):
            raise argparse.ArgumentTypeError(f"head dim {K} in '{part}': the kernels take K = 64, 128 or 256")
        if V not in (64, 128, 256):
            raise argparse.ArgumentTypeError(f"head dim {V} in '{part}': the kernels take V = 64, 128 or 256")
        heads.append((K, V))
    return heads


def warmup(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m qla warmup",
                                 description="Compile the GDN kernels of serving and training calls ahead of time.")
    ap.add_argument("--serving", action="store_true", help="prefill into a state pool, decode and verify")
    ap.add_argument("--training", action="store_true", help="forward and backward as training stacks call them")
    ap.add_argument("--dtype", choices=("bf16", "f16"), default="bf16", help="q, k, v (default bf16)")
    ap.add_argument("--head-dim", type=head_dims, default=[(128, 128)], metavar="K[xV][,...]",
                    help="head dims, e.g. 128 or 128,64x128 (default 128)")
    ap.add_argument("--k-first-pool", action="store_true",
                    help="serving: the pool is [slots, Hv, K, V] (state_pool_k_first) instead of V-first")
    ap.add_argument("--prefix-caching", action="store_true",
                    help="serving: the prefill also writes states every checkpoint_every tokens")
    ap.add_argument("--cache-dir", help="fill this folder (sets QLA_CACHE_DIR) instead of the kernel cache")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles (default: CPUs)")
    ap.add_argument("--only", metavar="TEXT", help="only the configurations whose line contains TEXT (see --list)")
    ap.add_argument("--list", action="store_true", help="print the configurations and compile nothing")
    a = ap.parse_args(argv)
    if a.jobs < 1:
        ap.error("--jobs must be at least 1")
    serving, training = (a.serving, a.training) if (a.serving or a.training) else (True, True)
    confs = configurations(serving, training, a.dtype, a.head_dim, a.k_first_pool, a.prefix_caching)
    if a.only:
        confs = [c for c in confs if a.only in c[0]]
        if not confs:
            ap.error(f"--only {a.only!r} matches no configuration (see --list)")
    if a.list:
        for label, _, _ in confs:
            print(label)
        return 0
    if a.cache_dir:
        os.environ["QLA_CACHE_DIR"] = os.path.abspath(a.cache_dir)  # read by the workers' libqla.so
    from . import QlaError, cache_dir
    try:
        folder = cache_dir()
    except QlaError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    before = _entries(folder)
    t0 = time.perf_counter()
    failed = 0
    import concurrent.futures as cf
    import multiprocessing
    # Fresh interpreters (spawn): no CUDA context or library state is forked.
    with cf.ProcessPoolExecutor(max_workers=min(a.jobs, len(confs)),
                                mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [(label, pool.submit(_compile_one, fn, kw)) for label, fn, kw in confs]
        for label, f in futures:
            seconds, err = f.result()
            if err:
                failed += 1
                print(f"FAILED {label}: {err}", flush=True)
            else:
                print(f"{seconds:7.1f} s  {label}", flush=True)
    after = _entries(folder)
    print(f"{len(confs) - failed} of {len(confs)} configurations in {time.perf_counter() - t0:.1f} s; "
          f"{folder}: {after} kernels ({after - before} new)")
    return 1 if failed else 0
