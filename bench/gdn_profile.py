"""Two calls of the GDN forward on one shape, for a profiler to attach to
(the first call compiles and loads the kernels; profile the launches of the
second: prepare, [pass 1, merge,] state).

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so ncu --launch-skip 2 --launch-count 2 \\
        --section SpeedOfLight --section WarpStateStats --section SourceCounters ... \\
        python3 bench/gdn_profile.py [--heads 16/64] [--T 8192] [--segment-chunks -1]
"""
import argparse

import torch
import torch.nn.functional as F

import qla

ap = argparse.ArgumentParser()
ap.add_argument("--heads", default="16/64")
ap.add_argument("--T", type=int, default=8192)
ap.add_argument("--segment-chunks", type=int, default=-1)
a = ap.parse_args()
hqk, hv = (int(x) for x in a.heads.split("/"))
T, K, V = a.T, 128, 128
q = F.normalize(torch.randn(1, T, hqk, K, device="cuda"), dim=-1).bfloat16()
k = F.normalize(torch.randn(1, T, hqk, K, device="cuda"), dim=-1).bfloat16()
v = torch.randn(1, T, hv, V, device="cuda").bfloat16()
g = F.logsigmoid(torch.randn(1, T, hv, device="cuda"))
beta = torch.sigmoid(torch.randn(1, T, hv, device="cuda"))
for _ in range(2):
    o, ht = qla.chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True, segment_chunks=a.segment_chunks)
torch.cuda.synchronize()
print("done", tuple(o.shape))
