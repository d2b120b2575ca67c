#!/usr/bin/env bash
# Installs a built tree to a fresh prefix and uses it as a user would, from
# outside the source tree: the installed files, every public header compiling
# on its own, the installed qlac and qla-gemm-host, and examples/consumer built
# against the prefix with find_package(qla) and run (without a GPU it stops
# after the cubin). Part of scripts/test.sh (CI).
# Usage: scripts/check_install.sh [BUILD_DIR]   (default: build; must be built)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
BUILD=${1:-build}
[ -f "$BUILD/CMakeCache.txt" ] || { echo "check_install: $BUILD is not a configured build folder" >&2; exit 1; }
BUILD=$(cd "$BUILD" && pwd)
CUDA=$(sed -n 's/^QLA_CUDA_ROOT:PATH=//p' "$BUILD/CMakeCache.txt")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/qla-install-XXXXXX")
WORK=$(cd "$WORK" && pwd -P)
trap 'rm -rf "$WORK"' EXIT
P=$WORK/prefix
export QLA_CACHE_DIR=$WORK/kernel-cache  # a cold cache: NVRTC really runs
start=$(date +%s)

fail() {
  echo "check_install: FAIL: $*" >&2
  exit 1
}
# expect_output WHAT PATTERN COMMAND...: COMMAND succeeds and prints a line
# matching PATTERN (grep -E); the output is kept in $OUT.
OUT=
expect_output() {
  local what=$1 pattern=$2 rc=0
  shift 2
  OUT=$("$@" 2>&1) || rc=$?
  [ "$rc" = 0 ] || { printf '%s\n' "$OUT" >&2; fail "$what: exit status $rc"; }
  grep -Eq -- "$pattern" <<<"$OUT" || { printf '%s\n' "$OUT" >&2; fail "$what: no '$pattern' in the output"; }
  echo "    $what: $(grep -E -m1 -- "$pattern" <<<"$OUT")"
}
# expect_error WHAT PATTERN COMMAND...: COMMAND fails and says PATTERN (grep -E).
expect_error() {
  local what=$1 pattern=$2
  shift 2
  if OUT=$("$@" 2>&1); then printf '%s\n' "$OUT" >&2; fail "$what: succeeded, expected an error"; fi
  grep -Eq -- "$pattern" <<<"$OUT" || { printf '%s\n' "$OUT" >&2; fail "$what: no '$pattern' in the error"; }
  echo "    $what: $(grep -E -m1 -- "$pattern" <<<"$OUT")"
}

echo "== install: $BUILD -> $P"
cmake --install "$BUILD" --prefix "$P" >/dev/null
for f in bin/qlac bin/qla-opt lib/libqla.so \
         lib/cmake/qla/qlaConfig.cmake lib/cmake/qla/qlaConfigVersion.cmake lib/cmake/qla/qlaTargets.cmake \
         include/qla/jit.h include/qla/c_api.h include/qla/gdn.h include/qla/gdn_c.h \
         include/qla/compiler/Compiler.h include/qla/runtime/Driver.h \
         share/qla/examples/host/gemm_host.cpp \
         share/qla/examples/consumer/CMakeLists.txt share/qla/examples/consumer/consumer.cpp; do
  [ -e "$P/$f" ] || fail "$f is not installed"
done
for f in examples/*.qla; do
  cmp -s "$f" "$P/share/qla/examples/$(basename "$f")" || fail "$f is not installed to share/qla/examples"
done
for f in runtime/include/qla/device/*.cuh; do
  cmp -s "$f" "$P/include/qla/device/$(basename "$f")" || fail "$f is not installed to include/qla/device"
done
[ ! -e "$P/include/qla/frontend" ] || fail "the compiler's internal headers (qla/frontend) are installed"
for b in bin/qlac bin/qla-opt lib/libqla.so; do
  rp=$(readelf -d "$P/$b" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
  case ":$rp:" in *"$SRC"*|*"$BUILD"*) fail "$b has an RPATH into the source or build tree: $rp" ;; esac
done
echo "    $(find "$P" -type f | wc -l) files, $(du -sh "$P" | cut -f1)"

echo "== every installed header compiles on its own (-I$P/include -I$CUDA/include)"
while IFS= read -r h; do
  rel=${h#"$P/include/"}
  echo "#include <$rel>" | c++ -std=c++17 -fsyntax-only -Wall -Werror -x c++ -I"$P/include" -I"$CUDA/include" - \
    || fail "$rel does not compile on its own against the installed headers"
done < <(find "$P/include" -name '*.h' | sort)
for h in qla/c_api.h qla/gdn_c.h; do
  echo "#include <$h>" | cc -std=c99 -fsyntax-only -Wall -Werror -x c -I"$P/include" - || fail "$h is not C"
done
# The device headers include only each other and the toolkit's.
while IFS= read -r inc; do
  [ -e "$P/include/$inc" ] || fail "an installed device header includes $inc, which is not installed"
done < <(sed -n 's/^#include "\(qla\/[^"]*\)".*/\1/p' "$P"/include/qla/device/*.cuh | sort -u)

echo "== the installed qlac, outside the tree"
cd "$WORK"
expect_output "qlac --version" '^qlac [0-9.]+ \(NVRTC [0-9.]+\)$' "$P/bin/qlac" --version
"$P/bin/qlac" "$P/share/qla/examples/gemm.qla" --emit=cubin -o "$WORK/gemm.cubin" || fail "qlac --emit=cubin failed"
[ "$(head -c 4 "$WORK/gemm.cubin" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || fail "qlac's gemm.cubin is not an ELF file"
echo "    share/qla/examples/gemm.qla -> gemm.cubin, $(stat -c %s "$WORK/gemm.cubin") bytes"
expect_error "qlac on a missing file" "cannot open '$WORK/missing.qla'" "$P/bin/qlac" "$WORK/missing.qla" --emit=cubin

if [ -x "$P/bin/qla-gemm-host" ]; then
  echo "== the installed qla-gemm-host finds share/qla/examples/gemm.qla by itself"
  expect_output "qla-gemm-host" "^JIT build of $P/share/qla/examples/gemm.qla: " "$P/bin/qla-gemm-host"
  grep -Eq '^(SKIP: no GPU|ALL PASS)' <<<"$OUT" || { printf '%s\n' "$OUT" >&2; fail "qla-gemm-host: neither SKIP nor ALL PASS"; }
  echo "    qla-gemm-host: $(grep -E -m1 '^(SKIP: no GPU|ALL PASS)' <<<"$OUT")"
  # The build tree's gemm_host has no path compiled in: it needs the argument.
  expect_error "the build tree's gemm_host without arguments" '^error: no kernel file given' \
    "$BUILD/examples/gemm_host"
fi

echo "== examples/consumer: find_package(qla) against $P"
cmake -S "$SRC/examples/consumer" -B "$WORK/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$P" >"$WORK/consumer-configure.log" 2>&1 \
  || { cat "$WORK/consumer-configure.log" >&2; fail "configuring examples/consumer"; }
ninja -C "$WORK/consumer" >"$WORK/consumer-build.log" 2>&1 \
  || { cat "$WORK/consumer-build.log" >&2; fail "building examples/consumer"; }
# ldd's whole output first: `ldd | grep -q` under pipefail fails at random
# when grep exits at the first match and ldd gets SIGPIPE.
LDD=$(ldd "$WORK/consumer/qla_consumer")
grep -q "libqla.so => $P/lib/libqla.so" <<<"$LDD" \
  || { printf '%s\n' "$LDD" >&2; fail "qla_consumer does not load the installed libqla.so"; }
expect_output "qla_consumer (built-in kernel)" '^tensor X f32 in N$' "$WORK/consumer/qla_consumer"
for want in '^cubin: [0-9]+ bytes, sm_90a$' \
            '^(no GPU \(.*\): compiled, not launched|launch: N=1000, 0 wrong elements: PASS)$'; do
  grep -Eq -- "$want" <<<"$OUT" || { printf '%s\n' "$OUT" >&2; fail "qla_consumer: no '$want' in the output"; }
  echo "    qla_consumer (built-in kernel): $(grep -E -m1 -- "$want" <<<"$OUT")"
done
expect_output "qla_consumer rmsnorm.qla -D BR=128" '^grid cdiv\(R,128\) 1 1$' \
  "$WORK/consumer/qla_consumer" "$P/share/qla/examples/rmsnorm.qla" -D BR=128
printf 'kernel k(X: f32[N]) grid(1) threads(128)\n{\n  let i = * 2\n}\n' >"$WORK/bad.qla"
expect_error "qla_consumer on a kernel with an error" "^$WORK/bad.qla:3:[0-9]+: error: " \
  "$WORK/consumer/qla_consumer" "$WORK/bad.qla"
expect_error "qla_consumer on a missing file" "missing.qla: error: cannot open file" \
  "$WORK/consumer/qla_consumer" "$WORK/missing.qla"
expect_error "qla_consumer with a bad option" "^error: unknown option '--bogus'" \
  "$WORK/consumer/qla_consumer" --bogus

echo "== find_package(qla) refuses what it cannot give"
mkdir -p "$WORK/fp"
cat >"$WORK/fp/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(fp LANGUAGES NONE)
find_package(qla ${WANT} REQUIRED)
EOF
expect_error "find_package(qla 9.0)" 'qlaConfig.cmake, version: [0-9.]+' \
  cmake -S "$WORK/fp" -B "$WORK/fp/b1" -DWANT=9.0 -DCMAKE_PREFIX_PATH="$P"
expect_error "find_package(qla) with QLA_CUDA_ROOT=/nonexistent" '/nonexistent/include/cuda.h not found' \
  cmake -S "$WORK/fp" -B "$WORK/fp/b2" -DWANT=0.1 -DQLA_CUDA_ROOT=/nonexistent -DCMAKE_PREFIX_PATH="$P"

echo "== install check passed in $(( $(date +%s) - start )) s"
