#!/usr/bin/env bash
# test/gpu/test_fla_backend.py with its calls in parallel processes (one
# --filter per name of --list: every call the script makes), since FLA's Triton
# autotuning takes minutes per call and one process runs them one by one.
# Each process also runs the registry checks. Exit 1 if any process failed.
# Environment: as for test_fla_backend.py (qla importable, FLA on PYTHONPATH,
# e.g. PYTHONPATH=python:.fla QLA_LIBRARY=build/compiler/libqla.so);
# FLA_CACHE_RESULTS=0 is set (parallel autotuning must not share FLA's cache).
# Usage: scripts/fla_backend_parallel.sh [LOG_DIR] [--timeout S]   (LOG_DIR relative to the caller's folder)
set -u -o pipefail
logs=${OUT:-build-fla-backend} timeout_s=470
while (($#)); do
  case "$1" in
    --timeout) timeout_s=${2:?}; shift 2 ;;
    *) logs=$1; shift ;;
  esac
done
mkdir -p "$logs" && logs=$(cd "$logs" && pwd)  # before the cd below
cd "$(dirname "$0")/.."
mapfile -t filters < <(python3 test/gpu/test_fla_backend.py --list)
(( ${#filters[@]} > 0 )) || { echo "fla_backend_parallel: test_fla_backend.py --list printed no calls" >&2; exit 1; }
t0=$(date +%s)
for i in "${!filters[@]}"; do
  FLA_CACHE_RESULTS=0 timeout "$timeout_s" python3 -u test/gpu/test_fla_backend.py --filter "${filters[$i]}" \
    > "$logs/call$i.log" 2>&1 &
done
rc=0 skipped=0
for job in $(jobs -p); do wait "$job" || rc=1; done
for i in "${!filters[@]}"; do
  printf '%-60s %s\n' "${filters[$i]}" "$(grep -E 'passed, [0-9]+ failed|^SKIP' "$logs/call$i.log" | tail -1)"
  grep -q -e ' 0 failed' -e '^SKIP' "$logs/call$i.log" || rc=1
  grep -q '^SKIP' "$logs/call$i.log" && skipped=$((skipped + 1))
done
if ((skipped == ${#filters[@]})); then
  grep -m1 '^SKIP' "$logs/call0.log"
  exit 0
fi
echo "fla_backend_parallel: $(( $(date +%s) - t0 )) s, $([[ $rc == 0 ]] && echo 'all passed or skipped' || echo 'FAILED') (logs in $logs)"
exit $rc
