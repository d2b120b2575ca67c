#!/usr/bin/env bash
# A/B runs of builds of QLA on the GPU machine in one device-tool call: each variant is a git revision, built
# here into its own libqla.so (in a worktree of its own, so the checkout is left alone), with its kernel cache
# filled here (the GPU machine compiles nothing that the rows need), packed into the ignored folder .carry/ab/
# with a run script. On the GPU machine the script times every variant's fused and two-kernel forward side by
# side (bench/gdn_paths.py, one process per variant), optionally the forward + backward (bench/gdn_backward.py
# --no-fla), and runs the conformance checks (scripts/gpu_checks.sh) on the variants named for them; every log
# goes into one archive under $OUT.
#
# Usage (on this machine, from the repository root):
#   scripts/ab_carry.sh pack NAME=REV [NAME=REV ...] [--heads H] [--layouts L] [--bwd-rows R] [--checks NAMES]
#       NAME: a label (letters, digits, _ -); REV: anything git rev-parse takes (main, wip/x, a1b2c3d)
#       --heads / --layouts: the forward rows (bench/gdn_paths.py; default 16/64,8/32,2/8 and 1x32768,8192x4)
#       --bwd-rows: bench/gdn_backward.py rows to time as well (default: none; also warms the backward's kernels)
#       --checks: comma-separated NAMEs to run scripts/gpu_checks.sh on (default: none); --check-steps S picks
#                 its steps (default examples,fwd,fwd-fused-head,fwd-fused-64,fwd-two,bwd)
#   scripts/ab_carry.sh call      # print the device tool's call (carry + command)
#
# Sizes: about 3.5 MiB per libqla (stripped, xz) and 3 MiB per forward cache; the backward's caches add about
# 8 MiB each (packed). The device tool carries at most 64 MiB per call: `pack` refuses more.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=.carry/ab
table=.carry/flashqla_published_h200.txt
limit=$((64 * 1024 * 1024))

die() { echo "ab_carry.sh: $*" >&2; exit 2; }

pack() {
  local heads="16/64,8/32,2/8" layouts="1x32768,8192x4" bwd_rows="" checks=""
  local steps="examples,fwd,fwd-fused-head,fwd-fused-64,fwd-two,bwd"
  local -a variants=()
  while (($#)); do
    case "$1" in
      --heads) heads=${2:?}; shift 2 ;;
      --layouts) layouts=${2:?}; shift 2 ;;
      --bwd-rows) bwd_rows=${2:?}; shift 2 ;;
      --checks) checks=${2:?}; shift 2 ;;
      --check-steps) steps=${2:?}; shift 2 ;;
      *=*) variants+=("$1"); shift ;;
      *) die "unknown argument '$1' (variants are NAME=REV)" ;;
    esac
  done
  ((${#variants[@]})) || die "name at least one variant NAME=REV"
  cd "$root"
  git check-ignore -q .carry/x || die ".carry/ is not ignored by git"
  [[ -f $table ]] || die "$table is missing (copy ../shared/anchors/flashqla_published_h200.txt there)"
  local -a names=()
  for v in "${variants[@]}"; do
    local name=${v%%=*} rev=${v#*=}
    [[ $name =~ ^[A-Za-z0-9_-]+$ ]] || die "bad variant name '$name'"
    git rev-parse -q --verify "$rev^{commit}" >/dev/null || die "'$rev' is not a revision"
    names+=("$name")
  done
  for c in ${checks//,/ }; do
    [[ " ${names[*]} " == *" $c "* ]] || die "--checks names '$c', which is not a variant"
  done
  rm -rf "$dest" && mkdir -p "$dest"
  local work
  work=$(mktemp -d /tmp/qla-ab-XXXXXX)
  for v in "${variants[@]}"; do
    local name=${v%%=*} rev=${v#*=} wt="$work/src-${v%%=*}"
    echo "== $name: $(git log --oneline -1 "$rev")"
    git worktree add -q --detach "$wt" "$rev"
    cmake -S "$wt" -B "$wt/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    # (paths relative to the worktree in ccache's hashes: the variants share their unchanged objects)
    CCACHE_BASEDIR="$wt" ninja -C "$wt/build" qla >/dev/null
    strip --strip-unneeded -o "$work/libqla-$name.so" "$wt/build/compiler/libqla.so"
    xz -T0 -c "$work/libqla-$name.so" > "$dest/libqla-$name.so.xz"
    mkdir -p "$work/qc-$name"
    # The caches are filled with the variant's own library and scripts (what its revision's GPU run uses).
    (cd "$wt" && QLA_CACHE_DIR="$work/qc-$name" PYTHONPATH=python QLA_LIBRARY="$work/libqla-$name.so" \
       python3 bench/gdn_paths.py --anchors "$root/$table" --warm-only --heads "$heads" --layouts "$layouts" >/dev/null)
    if [[ -n $bwd_rows || " ${checks//,/ } " == *" $name "* ]]; then
      (cd "$wt" && QLA_CACHE_DIR="$work/qc-$name" PYTHONPATH=python QLA_LIBRARY="$work/libqla-$name.so" \
         python3 test/gpu/test_gdn_backward.py --warm-only >/dev/null)
    fi
    tar -C "$work" -cJf "$dest/qc-$name.tar.xz" "qc-$name"
    git rev-parse "$rev" > "$dest/rev-$name"
    git worktree remove --force "$wt"
  done
  rm -rf "$work"
  {
    echo '#!/bin/bash'
    echo '# Written by scripts/ab_carry.sh pack; run from the repository root on the GPU machine.'
    echo 'set -u'
    echo 'export PYTHONPATH=python FLA_FLASH_QLA=0 FLA_TILELANG=0'
    echo "names=\"${names[*]}\" heads=\"$heads\" layouts=\"$layouts\" bwd_rows=\"$bwd_rows\""
    echo "checks=\"${checks//,/ }\" steps=\"$steps\" table=$table"
    cat <<'EOF'
w=/tmp/qla-ab; mkdir -p $w $OUT/ab
for n in $names; do
  xz -dc .carry/ab/libqla-$n.so.xz > $w/libqla-$n.so && tar -C $w -xJf .carry/ab/qc-$n.tar.xz
done
t0=$(date +%s)
for n in $names; do
  echo "== $n ($(cat .carry/ab/rev-$n))"
  QLA_LIBRARY=$w/libqla-$n.so QLA_CACHE_DIR=$w/qc-$n timeout 150 python3 bench/gdn_paths.py --anchors $table \
    --heads $heads --layouts $layouts --tag $n > $OUT/ab/paths-$n.log 2>&1; echo "paths rc=$?"
  grep '^\[' $OUT/ab/paths-$n.log
  if [[ -n $bwd_rows ]]; then
    QLA_LIBRARY=$w/libqla-$n.so QLA_CACHE_DIR=$w/qc-$n timeout 150 python3 bench/gdn_backward.py --no-fla \
      --anchors $table --rows $bwd_rows --out-dir $OUT/ab/bwd-$n > $OUT/ab/bwd-$n.log 2>&1; echo "bwd rc=$?"
    grep -E '^\| ' $OUT/ab/bwd-$n.log | tail -n +3
  fi
  echo "t=$(( $(date +%s) - t0 )) s"
done
for n in $checks; do
  QLA_LIBRARY=$w/libqla-$n.so QLA_CACHE_DIR=$w/qc-$n timeout 330 bash scripts/gpu_checks.sh --timeout 80 \
    --only $steps --logs $OUT/ab/checks-$n
  echo "t=$(( $(date +%s) - t0 )) s"
done
tar -C $OUT -cJf $OUT/ab.tar.xz ab && rm -rf $OUT/ab
EOF
  } > "$dest/run.sh"
  chmod +x "$dest/run.sh"
  local bytes
  bytes=$(du -cb "$dest" "$table" | tail -1 | cut -f1)
  echo "packed ${names[*]} into $dest: $((bytes / 1024 / 1024)) MiB with the table (limit 64 MiB)"
  ((bytes < limit)) || die "too big for one call: fewer variants, or no --bwd-rows / --checks"
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  call)
    cd "$root"
    [[ -f $dest/run.sh ]] || die "nothing packed: run 'scripts/ab_carry.sh pack ...' first"
    echo "device tool run: carry [\"$dest\", \"$table\"], command: bash $dest/run.sh 2>&1 | tail -60" ;;
  *) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 2 ;;
esac
