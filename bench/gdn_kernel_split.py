"""Times the two GDN forward kernels separately (generic JIT path, CUDA-graph
replay, median), to see where the forward's time goes.

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so python3 bench/gdn_kernel_split.py
"""
import os
import sys

import torch

import qla
from timing import time_graph

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    kp = qla.compile(os.path.join(ROOT, "kernels/gdn/gdn_fwd_prepare.qla"))
    ks = qla.compile(os.path.join(ROOT, "kernels/gdn/gdn_fwd_state.qla"), STORE_HT=1)
    bf = torch.bfloat16
    print(f"{'Hqk/Hv':>7} {'T':>6}  prepare ms  state ms  chunks  state us/chunk")
    for hk, hv, T in [(16, 64, 8192), (16, 64, 32768), (2, 8, 32768), (8, 32, 8192)]:
        K = V = 128
        q = torch.nn.functional.normalize(torch.randn(1, T, hk, K, device="cuda"), dim=-1).to(bf)
        k = torch.nn.functional.normalize(torch.randn(1, T, hk, K, device="cuda"), dim=-1).to(bf)
        v = torch.randn(1, T, hv, V, device="cuda").to(bf)
        g = torch.nn.functional.logsigmoid(torch.randn(1, T, hv, device="cuda"))
        beta = torch.sigmoid(torch.randn(1, T, hv, device="cuda"))
        cu = torch.zeros(1, dtype=torch.int32, device="cuda")
        h0 = torch.zeros(1, hv, K, V, device="cuda")
        W = torch.empty(1, T, hv, K, device="cuda", dtype=bf)
        U = torch.empty(1, T, hv, V, device="cuda", dtype=bf)
        GC = torch.empty(1, hv, (T + 63) // 64 * 64, device="cuda")  # [B, Hv, chunk slots of 64]
        O = torch.empty(1, T, hv, V, device="cuda", dtype=bf)
        HT = torch.empty(1, hv, K, V, device="cuda")
        # Segment states and transitions (context parallelism, unused here:
        # one segment per sequence, ls = 2^30).
        HS, LS = torch.zeros(1, hv, K, V, device="cuda"), torch.empty(1, hv, K, V, device="cuda")
        PH = PL = torch.empty(1, hv, K, K, device="cuda", dtype=bf)
        AM = torch.empty(1, hv, (T + 63) // 64 * 64, 64, device="cuda")  # SAVE_A = 0: not written
        TS = torch.empty(1, T, hv, 64, device="cuda", dtype=bf)        # OUT_T = 0: not written
        RK = torch.empty(1, T, hv, device="cuda")
        # The backward's tensors (SAVE_H = 0, HILO = 0: never touched).
        H = torch.empty(1, 1, hv, K, V, device="cuda", dtype=bf)
        VN = UL = torch.empty(1, T, hv, V, device="cuda", dtype=bf)
        tp, _ = time_graph(lambda: kp(k, v, g, beta, cu, W, U, GC, AM, TS, RK, UL, 1 << 30), calls=5, replays=10)
        tsx, _ = time_graph(lambda: ks(q, k, W, U, GC, cu, h0, O, HT, HS, LS, PH, PL, H, VN, UL, VN, K ** -0.5,
                                       1 << 30), calls=5, replays=10)
        nchunks = (T + 63) // 64
        print(f"{hk:>3}/{hv:<3} {T:>6}  {tp:10.3f}  {tsx:8.3f}  {nchunks:6d}  {1000 * tsx / nchunks:10.2f}")


if __name__ == "__main__":
    sys.exit(main())
