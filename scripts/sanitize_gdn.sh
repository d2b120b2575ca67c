#!/usr/bin/env bash
# NVIDIA compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over the
# GDN GPU tests, on small cases:
#
#   fwd  test/gpu/gdn_kernels_smoke.py       the forward kernels, driven directly
#   bwd  test/gpu/gdn_bwd_kernels_smoke.py   the backward kernels, driven directly
#   op   test/gpu/test_gdn_backward.py --no-large --seed S --filter F, once per F:
#        the operator (forward + backward through torch.autograd); every run
#        also does the suite's fixed checks (100 repeated backward calls at
#        T = 1000, a CUDA-graph capture, the training-mode checkpoints, bad
#        inputs). The small cases run the dh kernel 32 columns wide; run "op"
#        again with QLA_GDN_DH_BV=64 in the environment for its 64-wide slice.
#
# usage: scripts/sanitize_gdn.sh [--tool T[,T...]]... [--only fwd|bwd|op]...
#            [--filter SUBSTR]... [--timeout S] [--launch-count N] [--seed N] [--logs DIR]
#
#   --tool          memcheck, racecheck, synccheck, initcheck (default: all four)
#   --only          targets (default: fwd bwd op)
#   --filter        test_gdn_backward.py case-name substrings (default: "2x65 " and
#                   "lens=[1, 1, 2, 63, 1]", one small case each)
#   --timeout       seconds per sanitized run (default 1200; a hung mbarrier wait
#                   shows up as TIMEOUT)
#   --launch-count  check only the first N QLA kernel launches of each run (default:
#                   all, except racecheck on "op": 32 = the selected case's 8 launches
#                   plus the first two repeated calls, which use the segment/merge
#                   kernels; the remaining launches run unchecked)
#   --logs          where the logs go (default build-sanitize/)
#
# Environment (the caller's values win): QLA_LINE_INFO=1, PYTHONPATH=python,
# QLA_LIBRARY=build/compiler/libqla.so (relative to the repository root, or to
# the current directory if the file is there), PYTHON=python3,
# COMPUTE_SANITIZER=/usr/local/cuda/bin/compute-sanitizer (else PATH),
# QLA_SAN_PRINT_LIMIT=20, QLA_SAN_NO_CACHING=1 (fwd/bwd run with
# PYTORCH_NO_CUDA_MEMORY_CACHING=1: one cudaMalloc per tensor, so memcheck sees
# an overrun into a neighbouring tensor and initcheck sees fresh memory; "op"
# keeps the caching allocator, which its CUDA-graph check needs),
# QLA_SAN_INITCHECK_FILTER=0 (initcheck checks every kernel, so that the
# writes of PyTorch's kernels count as initialization; 1: only qla_gdn_*).
#
# memcheck, racecheck and synccheck check only QLA's kernels (--kernel-name
# kns=qla_gdn_: the JIT names them qla_<kernel>_<hash>). A run PASSes when the
# sanitizer reports 0 errors (racecheck: 0 errors; its warnings are printed)
# and the test itself passes under the tool. Prints a PASS/FAIL line per run
# and per tool; exit status 1 on any failure, 0 with SKIP without a GPU,
# PyTorch or compute-sanitizer.
set -u -o pipefail

usage() { sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; }

all_tools=(memcheck racecheck synccheck initcheck)
all_targets=(fwd bwd op)
tools=()
targets=()
filters=()
timeout_s=1200
launch_count=""
seed=1234
logdir=""

while (($#)); do
  case $1 in
    --tool|--only|--filter|--timeout|--launch-count|--seed|--logs)
      if (($# < 2)); then echo "sanitize_gdn.sh: $1 needs a value" >&2; exit 2; fi
      case $1 in
        --tool) IFS=, read -r -a more <<<"$2"; tools+=("${more[@]}") ;;
        --only) IFS=, read -r -a more <<<"$2"; targets+=("${more[@]}") ;;
        --filter) filters+=("$2") ;;
        --timeout) timeout_s=$2 ;;
        --launch-count) launch_count=$2 ;;
        --seed) seed=$2 ;;
        --logs) logdir=$2 ;;
      esac
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "sanitize_gdn.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
((${#tools[@]})) || tools=("${all_tools[@]}")
((${#targets[@]})) || targets=("${all_targets[@]}")
((${#filters[@]})) || filters=("2x65 " "lens=[1, 1, 2, 63, 1]")
for t in "${tools[@]}"; do
  case $t in memcheck|racecheck|synccheck|initcheck) ;; *) echo "sanitize_gdn.sh: unknown tool: $t" >&2; exit 2 ;; esac
done
for t in "${targets[@]}"; do
  case $t in fwd|bwd|op) ;; *) echo "sanitize_gdn.sh: unknown target: $t (fwd, bwd, op)" >&2; exit 2 ;; esac
done
for n in "$timeout_s" "$seed" ${launch_count:+"$launch_count"}; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "sanitize_gdn.sh: not a number: $n" >&2; exit 2; }
done

# QLA_LIBRARY given relative to the caller's directory: make it absolute.
if [[ -n ${QLA_LIBRARY:-} && $QLA_LIBRARY != /* && -f $QLA_LIBRARY ]]; then
  QLA_LIBRARY=$(cd "$(dirname "$QLA_LIBRARY")" && pwd)/$(basename "$QLA_LIBRARY")
fi
if [[ -n $logdir && $logdir != /* ]]; then logdir=$PWD/$logdir; fi
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
export PYTHONPATH=${PYTHONPATH:-python}
export QLA_LIBRARY=${QLA_LIBRARY:-build/compiler/libqla.so}
# Line info in the JIT's cubins (docs/internals.md, "Names and lines"), so
# that reports name .qla lines; QLA_LINE_INFO=0 turns it off.
export QLA_LINE_INFO=${QLA_LINE_INFO:-1}
PY=${PYTHON:-python3}
PRINT_LIMIT=${QLA_SAN_PRINT_LIMIT:-20}
NO_CACHING=${QLA_SAN_NO_CACHING:-1}
INITCHECK_FILTER=${QLA_SAN_INITCHECK_FILTER:-0}
ERRCODE=86  # the sanitizer's exit status when it found errors (the tests exit 1 on their own failures)
logdir=${logdir:-build-sanitize}

SAN=${COMPUTE_SANITIZER:-}
if [[ -z $SAN ]]; then
  if [[ -x /usr/local/cuda/bin/compute-sanitizer ]]; then
    SAN=/usr/local/cuda/bin/compute-sanitizer
  else
    SAN=$(command -v compute-sanitizer || true)
  fi
fi
if [[ -z $SAN || ! -x $SAN ]]; then
  echo "SKIP: compute-sanitizer not found (set COMPUTE_SANITIZER)"
  exit 0
fi
"$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)' >/dev/null 2>&1
case $? in
  0) ;;
  3) echo "SKIP: no GPU (torch.cuda.is_available() is False)"; exit 0 ;;
  *) echo "SKIP: $PY cannot import PyTorch"; exit 0 ;;
esac
if [[ ! -f $QLA_LIBRARY ]]; then
  echo "FAIL: QLA_LIBRARY=$QLA_LIBRARY: no such file (build QLA first)"
  exit 1
fi
mkdir -p "$logdir" || exit 1

echo "compute-sanitizer: $SAN ($("$SAN" --version 2>/dev/null | grep -m1 -iE 'version|sanitizer' || echo '?'))"
echo "QLA_LIBRARY=$QLA_LIBRARY PYTHONPATH=$PYTHONPATH; logs in $logdir/"
echo "tools: ${tools[*]}; targets: ${targets[*]}; op filters:$(printf ' "%s"' "${filters[@]}")"

declare -A tool_failed=()
declare -A tool_runs=()
results=()
any_fail=0

# run TOOL LABEL CACHING(0/1) DEFAULT_LAUNCH_COUNT -- COMMAND...
run() {
  local tool=$1 label=$2 caching=$3 dflt_count=$4
  shift 5
  local log="$logdir/$tool-$label.log"
  local opts=(--tool "$tool" --error-exitcode "$ERRCODE" --print-limit "$PRINT_LIMIT"
              --target-processes application-only --show-backtrace device)
  case $tool in
    memcheck) opts+=(--kernel-name kns=qla_gdn_ --padding 4096) ;;
    racecheck|synccheck) opts+=(--kernel-name kns=qla_gdn_) ;;
    initcheck) if [[ $INITCHECK_FILTER == 1 ]]; then opts+=(--kernel-name kns=qla_gdn_); fi ;;
  esac
  local count=${launch_count:-$dflt_count}
  if [[ -n $count && $count != 0 ]]; then opts+=(--launch-count "$count"); fi
  local envs=()
  if [[ $caching == 0 && $NO_CACHING == 1 ]]; then envs+=(PYTORCH_NO_CUDA_MEMORY_CACHING=1); fi

  local t0=$SECONDS rc
  {
    echo "# ${envs[*]} $SAN ${opts[*]} $*"
    env "${envs[@]}" timeout -k 30 "$timeout_s" "$SAN" "${opts[@]}" "$@"
  } >"$log" 2>&1
  rc=$?
  local dt=$((SECONDS - t0))

  local errs="" warns="" line re
  if [[ $tool == racecheck ]]; then
    line=$(grep -E 'RACECHECK SUMMARY:' "$log" | tail -n 1)
    re='\(([0-9]+) errors?, ([0-9]+) warnings?\)'
    if [[ $line =~ $re ]]; then errs=${BASH_REMATCH[1]}; warns=${BASH_REMATCH[2]}; fi
  fi
  if [[ -z $errs ]]; then
    line=$(grep -E 'ERROR SUMMARY: [0-9]+ error' "$log" | tail -n 1)
    re='ERROR SUMMARY: ([0-9]+) error'
    if [[ $line =~ $re ]]; then errs=${BASH_REMATCH[1]}; fi
  fi
  local named
  named=$(grep -E '^=+ .*qla_gdn_' "$log" | grep -cv 'COMPUTE-SANITIZER')

  local verdict note
  if ((rc == 124 || rc == 137)); then
    verdict=FAIL note="TIMEOUT after ${timeout_s} s"
  elif ((rc == 0)) && grep -q '^SKIP' "$log"; then
    verdict=SKIP note=$(grep -m1 '^SKIP' "$log")
  elif [[ -z $errs ]]; then
    verdict=FAIL note="no sanitizer summary (exit status $rc): the tool or the test crashed"
  elif ((errs > 0)); then
    verdict=FAIL note="$errs error(s) ($named report lines name a qla_gdn_ kernel)"
  elif ((rc != 0)); then
    verdict=FAIL note="sanitizer clean, but the test failed under $tool (exit status $rc)"
  else
    verdict=PASS note="0 errors"
  fi
  if [[ -n $warns && $warns != 0 ]]; then note+=", $warns racecheck warning(s)"; fi
  local msg
  msg=$(printf '%-9s %-34s %-4s %s  (%d s, %s)' "$tool" "$label" "$verdict" "$note" "$dt" "$log")
  echo "$msg"
  results+=("$msg")
  tool_runs[$tool]=$((${tool_runs[$tool]:-0} + 1))
  if [[ $verdict == FAIL ]]; then
    tool_failed[$tool]=$((${tool_failed[$tool]:-0} + 1))
    any_fail=1
    echo "    --- first sanitizer reports:"
    grep -E '^=+ ' "$log" | grep -v 'COMPUTE-SANITIZER' | head -n 40 | sed 's/^/    /'
    echo "    --- end of the test's output:"
    grep -vE '^=+ ' "$log" | tail -n 12 | sed 's/^/    /'
  fi
  return 0
}

for tool in "${tools[@]}"; do
  for target in "${targets[@]}"; do
    case $target in
      fwd) run "$tool" fwd-kernels-smoke 0 "" -- "$PY" test/gpu/gdn_kernels_smoke.py ;;
      bwd) run "$tool" bwd-kernels-smoke 0 "" -- "$PY" test/gpu/gdn_bwd_kernels_smoke.py ;;
      op)
        dflt=""
        if [[ $tool == racecheck ]]; then dflt=32; fi
        i=0
        for f in "${filters[@]}"; do
          i=$((i + 1))
          label="op-$i-$(printf '%s' "$f" | tr -c 'A-Za-z0-9=.' '_' | sed 's/__*/_/g; s/_$//')"
          run "$tool" "$label" 1 "$dflt" -- "$PY" test/gpu/test_gdn_backward.py --no-large --seed "$seed" --filter "$f"
        done ;;
    esac
  done
done

echo
echo "per tool:"
for tool in "${tools[@]}"; do
  n=${tool_runs[$tool]:-0}
  k=${tool_failed[$tool]:-0}
  if ((k > 0)); then
    printf '  %-9s FAIL (%d of %d runs)\n' "$tool" "$k" "$n"
  else
    printf '  %-9s PASS (%d runs)\n' "$tool" "$n"
  fi
done
exit "$any_fail"
