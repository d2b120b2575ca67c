"""One GDN forward row of FlashQLA's table, called a few times and nothing else, for a profiler
(the inputs of bench/gdn_context_parallel.py; segment_chunks: 0 the cost model's choice, -1 no split,
n > 0 segments of n chunks). For example, the kernels of the model's split at 4/16 1024x8:

    PYTHONPATH=python QLA_LIBRARY=build/compiler/libqla.so ncu --metrics gpu__time_duration.sum --csv \\
        -k regex:qla_ python3 bench/gdn_profile_row.py 4/16 1024x8 0
    ... ncu --set full --import-source yes -k regex:qla_gdn_fwd_fused_pass1 -c 1 -o pass1 python3 bench/gdn_profile_row.py ...
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gdn_context_parallel import flashqla_inputs, layout_lens  # noqa: E402


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    import torch
    import torch.nn.functional as F
    import qla
    heads, layout = sys.argv[1], sys.argv[2]
    seg = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    calls = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    hqk, hv = (int(x) for x in heads.split("/"))
    inp = flashqla_inputs(torch, F, layout_lens(layout), hqk, hv)
    for _ in range(calls):
        qla.chunk_gated_delta_rule(inp["q"], inp["k"], inp["v"], inp["g"], inp["beta"],
                                   initial_state=inp["initial_state"], output_final_state=True,
                                   cu_seqlens=inp["cu_seqlens"], segment_chunks=seg)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
