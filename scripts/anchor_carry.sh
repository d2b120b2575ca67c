#!/usr/bin/env bash
# Brings FlashQLA and FlashInfer to the GPU machine (which reaches no registry) so that bench/gdn_forward.py
# --flashqla --flashinfer and bench/gdn_backward.py --flashqla time them beside FLA and QLA in one process.
# Nothing of theirs is vendored in the repo: their wheels are packed here into the ignored folder .carry/anchors/
# (by ../shared/anchors/pack_flashqla.sh and pack_flashinfer.sh) and unpacked on the GPU machine outside the repo.
#
# The device tool moves at most 64 MiB per call (the working tree plus the carried ignored paths), and a warm
# machine is given back 30 s after a call, taking /tmp with it. So the anchors travel in a chain of calls, each
# started within 30 s of the previous one's end:
#   call 1  carries FlashInfer part aa (50 MiB)                  -> /tmp/fiparts
#   call 2  carries the FlashQLA tarball (~35 MiB)               -> unpacked into /tmp/site
#   call 3  carries FlashInfer part b + build/compiler/libqla.so + .fla + the published table,
#           reassembles FlashInfer into /tmp/fisite, checks both anchors (bench/anchors.py --gpu-smoke) and runs
#           the first group of the forward benchmark
#   call 4+ (optional, same chain) the other head groups, then the backward (all 32 rows, --graph --flashqla;
#           it needs only call 2 before it)
#
# Usage (on this machine, from anywhere):
#   scripts/anchor_carry.sh pack [--force]      # pack both anchors into .carry/anchors/ (~2 + ~4 min on 2 cores)
#   scripts/anchor_carry.sh sizes               # what each call moves, against the 64 MiB limit
#   scripts/anchor_carry.sh calls [--calls N] [--replays N]   # print the device-tool calls (carry + command)
# Environment: SHARED (default: the shared/ folder beside the repository) holds anchors/pack_*.sh and
# anchors/flashqla_published_h200.txt. LIB (default build/compiler/libqla.so, relative to the repository root)
# is the QLA library the calls carry and time: point it at a copy (e.g. .carry/anchorlib/libqla.so) to keep
# building while the chain runs. The forward runs on FlashQLA's benchmark inputs (--inputs flashqla), with FLA,
# FlashQLA and FlashInfer timed beside QLA in one process per head group.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${SHARED:-$(realpath -m "$root/../shared")}
dest=.carry/anchors                     # relative to the repository root (ignored: /.carry/ in .gitignore)
table=.carry/flashqla_published_h200.txt
limit=$((64 * 1024 * 1024))
lib=${LIB:-build/compiler/libqla.so}
# the forward benchmark's head groups, one call each (all 171 rows over three calls; merge with --merge)
groups=("2/8,4/16,8/24" "8/32,16/16,16/32" "16/48,16/64,32/32")

die() { echo "anchor_carry.sh: $*" >&2; exit 2; }

check_ignored() {
  cd "$root"
  for p in .carry/x .fla/x; do
    git check-ignore -q "$p" || die "$p is not ignored by git: add /${p%/x}/ to .gitignore first"
  done
}

bytes() {  # total bytes of the given paths (files or folders) under the repository root
  cd "$root"
  local n=0 p
  for p in "$@"; do
    [ -e "$p" ] || { echo "missing: $p" >&2; continue; }
    n=$((n + $(du -sb "$p" | cut -f1)))
  done
  echo "$n"
}

tree_bytes() {  # what travels without carry: tracked and untracked-not-ignored files (and shared/ if present)
  cd "$root"
  local n
  n=$(git ls-files -z -co --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
  [ -d shared ] && n=$((n + $(du -sb shared | cut -f1)))
  echo "$n"
}

mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }

cmd_pack() {
  local force=0
  [ "${1:-}" = "--force" ] && force=1
  check_ignored
  cd "$root"
  mkdir -p "$dest"
  [ -f "$shared/anchors/pack_flashqla.sh" ] || die "no $shared/anchors/pack_flashqla.sh (set SHARED)"
  if [ $force = 1 ] || [ ! -s "$dest/flashqla.tar.xz" ]; then
    echo "== packing FlashQLA (pack_flashqla.sh, ~2-4 min)"
    bash "$shared/anchors/pack_flashqla.sh" "$dest/flashqla.tar.xz"
  else
    echo "== FlashQLA already packed ($dest/flashqla.tar.xz; --force repacks)"
  fi
  if [ $force = 1 ] || [ ! -s "$dest/flashinfer/a/fi_site.part.aa" ] || [ ! -s "$dest/flashinfer/b/fi_site.part.ab" ] \
     || [ ! -s "$dest/flashinfer/b/fi_extra.tar.xz" ]; then
    echo "== packing FlashInfer (pack_flashinfer.sh, ~4 min)"
    rm -rf "$dest/flashinfer"
    bash "$shared/anchors/pack_flashinfer.sh" "$dest/flashinfer"
  else
    echo "== FlashInfer already packed ($dest/flashinfer; --force repacks)"
  fi
  if [ ! -s "$table" ]; then
    cp "$shared/anchors/flashqla_published_h200.txt" "$table"
    chmod u+w "$table"
  fi
  cmd_sizes
}

cmd_sizes() {
  cd "$root"
  local t; t=$(tree_bytes)
  echo "working tree (tracked + untracked-not-ignored): $(mib "$t")"
  local i=0 ok=1
  for c in "$dest/flashinfer/a" "$dest/flashqla.tar.xz" \
           "$dest/flashinfer/b $lib .fla $table" \
           "$lib .fla $table"; do
    i=$((i + 1))
    local label="call $i"; [ $i = 4 ] && label="call 4+"
    local n
    # shellcheck disable=SC2086  # $c is a list of paths
    n=$(bytes $c)
    local tot=$((n + t)) flag=ok
    [ $tot -gt $limit ] && { flag="OVER 64 MiB"; ok=0; }
    printf '  %-8s carry %-78s %9s + tree = %9s  %s\n' "$label" "$c" "$(mib "$n")" "$(mib "$tot")" "$flag"
  done
  if [ -d .carry/qlacache ]; then
    local n; n=$(bytes .carry/qlacache)
    local tot=$((n + t)) flag=ok
    [ $tot -gt $limit ] && flag="OVER 64 MiB"
    printf '  %-8s carry %-78s %9s + tree = %9s  %s\n' "(1b)" ".carry/qlacache (optional)" "$(mib "$n")" "$(mib "$tot")" "$flag"
  fi
  echo "files:"
  # shellcheck disable=SC2012
  ls -l "$dest/flashqla.tar.xz" "$dest"/flashinfer/a/* "$dest"/flashinfer/b/* "$lib" "$table" 2>/dev/null \
    | awk '{printf "  %12d  %s\n", $5, $NF}'
  [ $ok = 1 ] || { echo "some call is over the limit: carry less (see above)" >&2; return 1; }
}

# the environment every bench call sets up on the GPU machine (after call 3 unpacked everything)
# shellcheck disable=SC2016  # expanded there, not here
env_line='export PYTHONPATH=$PWD/python:$PWD/.fla:/tmp/site:/tmp/fisite:/tmp/fisite/nvidia_cutlass_dsl/dsl_packages QLA_LIBRARY=$PWD/'"$lib"' FLA_FLASH_QLA=0 FLA_TILELANG=0 PYTHONUNBUFFERED=1; if [ -d /tmp/qlacache ]; then export QLA_CACHE_DIR=/tmp/qlacache; fi; A=.carry/flashqla_published_h200.txt'

fwd_group() {  # $1 heads, $2 calls, $3 replays: warm every head configuration in its own process, then time
  local h=$1
  echo "H=$h; for h in \${H//,/ }; do python3 bench/gdn_forward.py --anchors \$A --heads \$h --inputs flashqla --warm-only --no-ours --no-write --flashqla --flashinfer > /tmp/warm_\${h/\\//-}.log 2>&1 & done; wait; tail -n 3 /tmp/warm_*.log; python3 bench/gdn_forward.py --anchors \$A --heads \$H --inputs flashqla --flashqla --flashinfer --check --calls $2 --replays $3 --out-dir \$OUT 2>&1 | tee \$OUT/fwd.log"
}

print_call() {  # $1 title, $2 carry (JSON list), $3 command
  local len=${#3}
  echo "### $1"
  echo "carry: $2"
  echo "command ($len characters$([ "$len" -gt 2000 ] && echo ', OVER the 2000 limit')):"
  echo "$3"
  echo
}

cmd_calls() {
  local calls=5 replays=10
  while [ $# -gt 0 ]; do
    case $1 in
      --calls) calls=$2; shift 2 ;;
      --replays) replays=$2; shift 2 ;;
      *) die "calls: unknown option $1" ;;
    esac
  done
  cd "$root"
  local missing=0 p
  for p in "$dest/flashinfer/a/fi_site.part.aa" "$dest/flashinfer/b/fi_site.part.ab" "$dest/flashinfer/b/fi_extra.tar.xz" \
           "$dest/flashqla.tar.xz" "$lib" .fla "$table"; do
    [ -e "$p" ] || { echo "# missing here: $p (run: scripts/anchor_carry.sh pack; build libqla.so; FLA's source in .fla)"; missing=1; }
  done
  [ $missing = 0 ] || echo
  echo "# Device-tool calls, kind nvidia-h200, in this order, each started within 30 s of the previous one's end"
  echo "# (a warm machine is given back 30 s after a call, and /tmp with it: then start again at call 1)."
  echo "# What each moves: scripts/anchor_carry.sh sizes. Results come back under files_at: keep the JSON/MD."
  echo
  print_call "call 1: FlashInfer part aa -> /tmp/fiparts" "[\"$dest/flashinfer/a\"]" \
    "set -e; mkdir -p /tmp/fiparts; cp $dest/flashinfer/a/fi_site.part.aa /tmp/fiparts/; ls -l /tmp/fiparts; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; which nvcc || true"
  if [ -d .carry/qlacache ]; then
    print_call "call 1b (optional, only if it fits: see sizes): QLA's kernel cache -> /tmp/qlacache" "[\".carry/qlacache\"]" \
      "set -e; test -f /tmp/fiparts/fi_site.part.aa || { echo 'part aa is gone: start again at call 1'; exit 3; }; rm -rf /tmp/qlacache; cp -r .carry/qlacache /tmp/qlacache; ls /tmp/qlacache | wc -l"
  fi
  print_call "call 2: FlashQLA -> /tmp/site" "[\"$dest/flashqla.tar.xz\"]" \
    "set -e; test -f /tmp/fiparts/fi_site.part.aa || { echo 'part aa is gone: start again at call 1'; exit 3; }; mkdir -p /tmp/site; tar -xJf $dest/flashqla.tar.xz -C /tmp/site; ls /tmp/site; du -sh /tmp/site"
  print_call "call 3: FlashInfer part b -> /tmp/fisite, smoke test of both anchors, forward group 1 (${groups[0]})" \
    "[\"$dest/flashinfer/b\", \"$lib\", \".fla\", \"$table\"]" \
    "set -e -o pipefail; test -f /tmp/fiparts/fi_site.part.aa -a -d /tmp/site/flash_qla || { echo 'anchors gone: start again at call 1'; exit 3; }; mkdir -p /tmp/fisite; cat /tmp/fiparts/fi_site.part.aa $dest/flashinfer/b/fi_site.part.ab | xz -d | tar -x -C /tmp/fisite; tar -xJf $dest/flashinfer/b/fi_extra.tar.xz -C /tmp/fisite; rm -f /tmp/fiparts/fi_site.part.aa; $env_line; python3 bench/anchors.py --probe --gpu-smoke 2>&1 | tee \$OUT/smoke.log || echo 'SMOKE TEST FAILED (continuing: a missing anchor is skipped)'; $(fwd_group "${groups[0]}" "$calls" "$replays")"
  local g n=4
  for g in "${groups[@]:1}"; do
    print_call "call $n (optional): forward group $((n - 2)) ($g)" "[\"$lib\", \".fla\", \"$table\"]" \
      "set -e -o pipefail; test -d /tmp/site/flash_qla -a -d /tmp/fisite/flashinfer || { echo 'anchors gone: start again at call 1'; exit 3; }; $env_line; $(fwd_group "$g" "$calls" "$replays")"
    n=$((n + 1))
  done
  # All 32 rows as CUDA graphs; FLA's and FlashQLA's kernels compiled first in eight parallel processes (one
  # per head group and length, FLA_CACHE_RESULTS=0 there so that no autotune choice made under contention is
  # kept); may follow call 2 directly (the backward needs no FlashInfer).
  print_call "call $n (optional; after call 2 or later): backward, all 32 rows, with FlashQLA measured" \
    "[\"$lib\", \".fla\", \"$table\"]" \
    "set -e -o pipefail; test -d /tmp/site/flash_qla || { echo 'FlashQLA gone: start again at call 1'; exit 3; }; $env_line; for h in hk16_hv32 hk8_hv16 hk4_hv8 hk2_hv4; do for n in 8k 32k; do R=\$h/\${n}_1seq,\$h/\${n}_2seq,\$h/\${n}_4seq,\$h/\${n}_8seq; FLA_CACHE_RESULTS=0 python3 bench/gdn_backward.py --anchors \$A --rows \$R --warm-only --no-qla --flashqla > /tmp/bwarm_\${h}_\$n.log 2>&1 & done; done; wait; tail -qn 1 /tmp/bwarm_*.log; python3 bench/gdn_backward.py --anchors \$A --graph --check --flashqla --out-dir \$OUT 2>&1 | tee \$OUT/bwd.log"
  echo "# Afterwards, here: copy the returned gdn_forward_*_partial.json of each call into separate folders, then"
  echo "#   python3 bench/gdn_forward.py --anchors $table --merge A/*.json B/*.json C/*.json --out-dir bench/results"
}

case "${1:-}" in
  pack) shift; cmd_pack "$@" ;;
  sizes) shift; cmd_sizes ;;
  calls) shift; cmd_calls "$@" ;;
  *) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
