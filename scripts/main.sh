#!/usr/bin/env bash
# The main job: install what is missing, build, compile every kernel with qlac
# to an sm_90a cubin (register/spill report), and where a GPU is present run
# the kernels against their references and print timings.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
scripts/bootstrap.sh "$BUILD"
QLAC="$BUILD/tools/qlac"
OUT="$BUILD/kernels-out"
mkdir -p "$OUT"
echo "== compiling kernels with qlac (sm_90a)"
shopt -s nullglob
for f in examples/*.qla kernels/gdn/*.qla; do
  base=$(basename "$f" .qla)
  "$QLAC" "$f" --emit=cubin --ptxas-verbose -o "$OUT/$base.cubin" 2>"$OUT/$base.ptxas.txt"
  regs=$(grep -o 'Used [0-9]* registers' "$OUT/$base.ptxas.txt" | head -1)
  spill=$(grep -o '[0-9]* bytes spill stores' "$OUT/$base.ptxas.txt" | head -1)
  printf '  %-28s %s, %s -> %s\n' "$f" "$regs" "$spill" "$OUT/$base.cubin"
done
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "== GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" QLA_LIBRARY="$PWD/$BUILD/compiler/libqla.so"
  python3 test/gpu/test_examples.py
  echo "== GDN forward kernels against a float64 reference"
  python3 test/gpu/gdn_kernels_smoke.py
  echo "== GDN forward kernel timings (CUDA-graph replay, median)"
  python3 bench/gdn_kernel_split.py
  python3 bench/gemm.py
else
  echo "== no GPU (or no PyTorch with CUDA) here: kernels compiled, nothing run"
fi
