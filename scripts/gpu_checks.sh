#!/usr/bin/env bash
# The GPU conformance checks in one go, for one call of the device tool (each
# step under its own time limit, its log in $OUT or --logs, a PASS/FAIL/SKIP
# line per step and a summary; exit 1 when a step failed):
#
#   examples       test/gpu/test_examples.py      (language features, float64 references)
#   line-info      test/gpu/test_line_info.py     (compute-sanitizer at .qla lines)
#   fwd            test/gpu/test_gdn_forward.py   (the operator's choice of kernels)
#   fwd-fused      the same with QLA_GDN_FUSED=1  (every case, split ones too, on the fused kernel,
#                  with the model's V slice)
#   fwd-fused-64   ... and QLA_GDN_FUSED_BV=64    (the fused kernel with 64-wide V slices per CTA)
#   fwd-fused-head ... and QLA_GDN_FUSED_BV=128   (the fused kernel with a whole head per CTA)
#   fwd-two        the same with QLA_GDN_FUSED=0  (the two-kernel path)
#   bwd            test/gpu/test_gdn_backward.py --no-large  (the default: the fused gradient kernel
#                  where K, V <= 128, its own state-gradient segments)
#   bwd-six        the same with --six            (QLA_GDN_BWD_FUSED=0: the six kernels, every case)
#   serving        test/gpu/test_serving.py       (prefill into a pool, decode, verify)
#   cold-start     bench/cold_start.py            (a fresh process's first prefill and decode: empty,
#                  warm and prebuilt kernel caches)
#   fla-backend    test/gpu/test_fla_backend.py   (needs FLA on PYTHONPATH; one process per call,
#                  scripts/fla_backend_parallel.sh; at least 500 s whatever --timeout says)
#   gla            test/gpu/test_gla.py --no-large
#
# usage: scripts/gpu_checks.sh [--only STEP[,STEP...]] [--skip STEP[,STEP...]] [--timeout S] [--logs DIR]
#
# Environment (the caller's values win): PYTHONPATH=python:.fla,
# QLA_LIBRARY=build/compiler/libqla.so, QLA_CACHE_DIR (unset: QLA's default),
# FLA_FLASH_QLA=0, FLA_TILELANG=0. Run from the repository root, e.g. as the
# device tool's command with carry ["build/compiler/libqla.so", ".fla", ".carry"]
# (a kernel cache filled here: `test/gpu/test_gdn_backward.py --warm-only`
# with QLA_CACHE_DIR=$PWD/.carry/qlacache, see test/gpu/README.md).
set -u -o pipefail

usage() { sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; }

all_steps=(examples line-info fwd fwd-fused fwd-fused-64 fwd-fused-head fwd-two bwd bwd-six serving cold-start fla-backend gla)
only=() skip=() timeout_s=300 logs="${OUT:-build-gpu-checks}"
while (($#)); do
  case "$1" in
    --only) IFS=, read -r -a more <<<"${2:?}"; only+=("${more[@]}"); shift 2 ;;
    --skip) IFS=, read -r -a more <<<"${2:?}"; skip+=("${more[@]}"); shift 2 ;;
    --timeout) timeout_s="${2:?}"; shift 2 ;;
    --logs) logs="${2:?}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu_checks.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for s in "${only[@]}" "${skip[@]}"; do
  [[ " ${all_steps[*]} " == *" $s "* ]] || { echo "gpu_checks.sh: unknown step '$s' (${all_steps[*]})" >&2; exit 2; }
done

export PYTHONPATH="${PYTHONPATH:-python:.fla}"
export QLA_LIBRARY="${QLA_LIBRARY:-$PWD/build/compiler/libqla.so}"
export FLA_FLASH_QLA="${FLA_FLASH_QLA:-0}" FLA_TILELANG="${FLA_TILELANG:-0}"
PY="${PYTHON:-python3}"
mkdir -p "$logs"

# FLA's Triton compiles and autotunes every call's kernels first: 9 processes side by side took
# over 190 s on the H200 with FLA 0.6.0 (2026-12-05), so that step gets at least 500 s.
fla_timeout_s=$((timeout_s > 500 ? timeout_s : 500))
declare -A cmd=(
  [examples]="$PY -u test/gpu/test_examples.py"
  [line-info]="$PY -u test/gpu/test_line_info.py"
  [fwd]="$PY -u -X faulthandler test/gpu/test_gdn_forward.py"
  [fwd-fused]="env QLA_GDN_FUSED=1 $PY -u -X faulthandler test/gpu/test_gdn_forward.py"
  [fwd-fused-64]="env QLA_GDN_FUSED=1 QLA_GDN_FUSED_BV=64 $PY -u -X faulthandler test/gpu/test_gdn_forward.py"
  [fwd-fused-head]="env QLA_GDN_FUSED=1 QLA_GDN_FUSED_BV=128 $PY -u -X faulthandler test/gpu/test_gdn_forward.py"
  [fwd-two]="env QLA_GDN_FUSED=0 $PY -u -X faulthandler test/gpu/test_gdn_forward.py"
  [bwd]="$PY -u -X faulthandler test/gpu/test_gdn_backward.py --no-large"
  [bwd-six]="$PY -u -X faulthandler test/gpu/test_gdn_backward.py --no-large --six"
  [serving]="$PY -u -X faulthandler test/gpu/test_serving.py"
  [cold-start]="$PY -u bench/cold_start.py --out $logs/cold_start.json"
  [fla-backend]="bash scripts/fla_backend_parallel.sh $logs/fla-backend --timeout $((fla_timeout_s - 10))"
  [gla]="$PY -u test/gpu/test_gla.py --no-large"
)

failed=0 summary=()
for s in "${all_steps[@]}"; do
  if ((${#only[@]})) && [[ " ${only[*]} " != *" $s "* ]]; then continue; fi
  if [[ " ${skip[*]} " == *" $s "* ]]; then continue; fi
  t0=$SECONDS
  step_timeout=$timeout_s
  [[ $s == fla-backend ]] && step_timeout=$fla_timeout_s
  timeout "$step_timeout" ${cmd[$s]} >"$logs/$s.log" 2>&1
  rc=$?
  dt=$((SECONDS - t0))
  if ((rc == 124)); then verdict="FAIL (timeout ${step_timeout} s)"
  elif ((rc != 0)); then verdict="FAIL (exit $rc)"
  elif grep -q '^SKIP' "$logs/$s.log"; then verdict="SKIP ($(grep -m1 '^SKIP' "$logs/$s.log"))"
  else verdict=PASS; fi
  [[ $verdict == FAIL* ]] && failed=1
  line=$(printf '%-12s %-40s %4d s  %s' "$s" "$verdict" "$dt" "$(tail -n 1 "$logs/$s.log" | cut -c1-80)")
  echo "$line"
  summary+=("$line")
done
echo
printf '%s\n' "${summary[@]}" >"$logs/summary.txt"
((failed)) && echo "gpu_checks: FAILED (logs in $logs)" || echo "gpu_checks: all steps passed or skipped (logs in $logs)"
exit $failed
