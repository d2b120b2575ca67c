#!/usr/bin/env bash
# bench/gdn_backward.py in one device call: first every row's FLA (Triton autotune) and, with
# --flashqla, FlashQLA (TileLang JIT, per shape) kernels compiled in parallel processes of
# --per rows each (`--warm-only`, FLA_CACHE_RESULTS=0 so that no timing made under load is
# kept), then every row timed in one process. On the H200 one process warming 8 rows did not
# finish in 230 s (2026-12-05): FlashQLA compiles its forward and backward per row (~20 s +
# ~40 s). QLA's own kernels come from the kernel cache (fill it here with
# `python3 test/gpu/test_gdn_backward.py --warm-only` and carry $QLA_CACHE_DIR).
#
# With --flashqla the warm-up and the timed run do not fit one 600 s device call together: on an
# H100 (2026-12-05) 16 processes of 2 rows each all timed out at 230 s, and a timed process that
# compiles FlashQLA itself spends about 115 s per head group. Then run `--only warm` in one call
# and `--only time` in the next, on the same warm machine (Triton's and TileLang's disk caches,
# ~/.triton and ~/.tilelang/cache, stay there between calls).
#
# usage: scripts/bench_backward.sh [--rows R1,R2,...] [--per N] [--warm-timeout S] [--timeout S]
#                                  [--anchors FILE] [--logs DIR] [--only warm|time] [-- ARGS for the timed run]
#   e.g. scripts/bench_backward.sh --anchors .carry/flashqla_published_h200.txt -- --graph --check --six --flashqla --out-dir $OUT
# The timed run's flags also pick what is warmed: --flashqla and --six pass on to --warm-only.
set -u -o pipefail
rows="" per=2 warm_timeout=300 timeout_s=280 anchors="" logs="${OUT:-build-bench-backward}" only=""
while (($#)); do
  case "$1" in
    --rows) rows=${2:?}; shift 2 ;;
    --per) per=${2:?}; shift 2 ;;
    --warm-timeout) warm_timeout=${2:?}; shift 2 ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --anchors) anchors=${2:?}; shift 2 ;;
    --logs) logs=${2:?}; shift 2 ;;
    --only) only=${2:?}; shift 2
      [[ $only == warm || $only == time ]] || { echo "bench_backward.sh: --only takes warm or time, not '$only'" >&2; exit 2; } ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "bench_backward.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
timed=("$@")
mkdir -p "$logs" && logs=$(cd "$logs" && pwd)
cd "$(dirname "$0")/.."
bench=(python3 -u bench/gdn_backward.py ${anchors:+--anchors "$anchors"})
if [[ -z $rows ]]; then
  rows=$("${bench[@]}" --list-rows | python3 -c "import ast, sys; print(','.join(ast.literal_eval(l)['name'] for l in sys.stdin))") \
    || { echo "bench_backward.sh: could not list the rows" >&2; exit 1; }
fi
IFS=, read -r -a all <<<"$rows"
warm=()
for f in "${timed[@]}"; do [[ $f == --flashqla || $f == --six ]] && warm+=("$f"); done
if [[ $only != time ]]; then
  echo "bench_backward: warming ${#all[@]} rows, $per per process ($(date -u +%T))"
  for ((i = 0; i < ${#all[@]}; i += per)); do
    group=$(IFS=,; echo "${all[*]:i:per}")
    FLA_CACHE_RESULTS=0 timeout "$warm_timeout" "${bench[@]}" --warm-only "${warm[@]}" --rows "$group" \
      >"$logs/warm_$((i / per)).log" 2>&1 &
  done
  failed=0
  for job in $(jobs -p); do wait "$job" || failed=$((failed + 1)); done
  echo "bench_backward: warm-up done ($(date -u +%T)), $failed of $(( (${#all[@]} + per - 1) / per )) processes failed or timed out"
  if [[ $only == warm ]]; then exit $((failed > 0)); fi
fi
timeout "$timeout_s" "${bench[@]}" --rows "$rows" "${timed[@]}" 2>&1 | tee "$logs/bench.log" | grep -v "TileLang\|Warning"
rc=${PIPESTATUS[0]}
echo "bench_backward: timed run exit $rc ($(date -u +%T))"
exit "$rc"
