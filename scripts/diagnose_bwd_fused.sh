#!/usr/bin/env bash
# The measurements that decide the fused gradient kernel's next step
# (kernels/gdn/KERNELS.md, section 5), in one device call of about 5 minutes
# with the kernel cache filled beforehand (--warm, on the build machine: no
# torch, no GPU; then carry $QLA_CACHE_DIR):
#   1. forward + backward at 16/32 heads, 8 x 1024 and 1 x 8192 tokens
#      (FlashQLA's inputs), each step's kernels timed by torch.profiler
#      (bench/gdn_trace.py --backward --profile): the six kernels; the fused
#      kernel; the fused kernel with QLA_SMEM_PTR32=1 (tiles as 32-bit shared
#      addresses); with --base-lib, the six kernels through that library too;
#   2. the fused kernel's roles traced at 16/32 8 x 1024 (QLA_TRACE: each
#      role's step and waits);
#   3. the forward alone at 16/32 1 x 8192, 16/64 1 x 32768 and 4/16 8 x 1024,
#      default against QLA_SMEM_PTR32=1 (the whole-head fused forward spills
#      24-28 bytes with 32-bit tile pointers: does it slow down?) and, with
#      --base-lib, against that library (an earlier build's libqla.so: what
#      a change of the emitter did to the forward, e.g. stmatrix stores).
# Each variant is a compile option or a library, so each runs in a process of
# its own; the kernel cache keys on the emitted CUDA, so both libraries share
# one cache.
#
# usage: scripts/diagnose_bwd_fused.sh [--warm] [--logs DIR] [--base-lib PATH]
# Environment: PYTHONPATH=python, QLA_LIBRARY=build/compiler/libqla.so, QLA_CACHE_DIR.
set -u -o pipefail
warm=0 logs="${OUT:-build-diagnose}" base=""
while (($#)); do
  case "$1" in
    --warm) warm=1; shift ;;
    --logs) logs=${2:?}; shift 2 ;;
    --base-lib) base=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "diagnose_bwd_fused.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
export PYTHONPATH="${PYTHONPATH:-python}" QLA_LIBRARY="${QLA_LIBRARY:-$PWD/build/compiler/libqla.so}"
variants=("QLA_GDN_BWD_FUSED=0" "QLA_GDN_BWD_FUSED=1" "QLA_GDN_BWD_FUSED=1 QLA_SMEM_PTR32=1")
fwd_variants=("QLA_SMEM_PTR32=0" "QLA_SMEM_PTR32=1")
if [[ -n $base ]]; then
  [[ -f $base ]] || { echo "diagnose_bwd_fused.sh: no library '$base'" >&2; exit 2; }
  variants+=("QLA_LIBRARY=$base QLA_GDN_BWD_FUSED=0")
  fwd_variants+=("QLA_LIBRARY=$base")
fi
if ((warm)); then
  # The kernels of these calls: bf16, varlen int32 offsets, an initial state, the final state and its gradient.
  code='import qla.gdn as G
G.warmup("bf16", 128, 128, varlen=True, cu_dtype="i32", initial_state=True, output_final_state=True, backward=True, dht=True)'
  for v in "${variants[@]}" "QLA_TRACE=1 QLA_GDN_BWD_FUSED=1"; do
    echo "warm: $v"
    env $v python3 -c "$code" || exit 1
  done
  env QLA_SMEM_PTR32=1 python3 -c "$code" || exit 1
  exit 0
fi
mkdir -p "$logs"
for row in "16/32 8x1024" "16/32 1x8192"; do
  for v in "${variants[@]}"; do
    echo "== $row $v"
    env $v timeout 120 python3 -u bench/gdn_trace.py $row --backward --profile --calls 10 $( [[ $v == *FUSED=1* ]] && echo --fused-bwd ) 2>&1 | grep -v Warning
  done
done | tee "$logs/profiles.txt"
echo "== trace: 16/32 8x1024, fused" | tee "$logs/trace.txt"
env QLA_GDN_BWD_FUSED=1 timeout 150 python3 -u bench/gdn_trace.py 16/32 8x1024 --backward --fused-bwd --calls 3 \
  --trace "$logs/fused.trace" 2>&1 | grep -v Warning | tee -a "$logs/trace.txt" | head -60
for row in "16/32 1x8192" "16/64 1x32768" "4/16 8x1024"; do
  for v in "${fwd_variants[@]}"; do
    echo "== forward $row $v"
    env $v timeout 90 python3 -u bench/gdn_trace.py $row --calls 30 2>&1 | grep -v Warning
  done
done | tee "$logs/forward_ab.txt"
