#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment, then uses the package from
# a clean shell outside the source tree (no QLA_* variables, no PYTHONPATH):
# import qla, python -m qla, qlac on the PATH down to a cubin. Not part of
# scripts/test.sh: it is a second full build (about 2 min on 2 cores).
# Usage: scripts/check_pip.sh [PIP_OPTION...]
#   e.g. scripts/check_pip.sh -Cbuild-dir=build-pip   (keep the build folder)
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
WORK=$(mktemp -d "${TMPDIR:-/tmp}/qla-pip-XXXXXX")
WORK=$(cd "$WORK" && pwd -P)
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "check_pip: FAIL: $*" >&2
  exit 1
}
start=$(date +%s)

echo "== pip install . $* (venv $WORK/venv)"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q "$@" . || fail "pip install . failed"
echo "    built and installed in $(( $(date +%s) - start )) s"

# A clean shell: only the venv on the PATH, the cache in $WORK, outside the tree.
clean() { (cd "$WORK" && env -i HOME="$HOME" PATH="$WORK/venv/bin:/usr/bin:/bin" QLA_CACHE_DIR="$WORK/cache" "$@"); }
site=$(clean python -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
lib=$(clean python -c 'import qla; print(qla.library_path())') || fail "import qla"
[ "$lib" = "$site/qla/libqla.so" ] || fail "qla loads $lib, not the package's $site/qla/libqla.so"
out=$(clean python -m qla) || fail "python -m qla"
printf '%s\n' "$out" | sed 's/^/    /'
grep -qx "QLA $(sed -n 's/^project(qla VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)" <<<"$out" || fail "python -m qla: wrong version"
grep -qx "kernel cache: $WORK/cache" <<<"$out" || fail "python -m qla: wrong kernel cache folder"
grep -qx "qlac: $WORK/venv/bin/qlac" <<<"$out" || fail "python -m qla: qlac is not the venv's"
clean qlac "$SRC/examples/gemm.qla" --emit=cubin -o "$WORK/gemm.cubin" || fail "qlac --emit=cubin"
[ "$(head -c 4 "$WORK/gemm.cubin" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || fail "gemm.cubin is not an ELF file"
echo "    qlac examples/gemm.qla --emit=cubin: $(stat -c %s "$WORK/gemm.cubin") bytes"
if clean qlac "$WORK/missing.qla" 2>/dev/null; then fail "qlac on a missing file succeeded"; fi
echo "== pip check passed in $(( $(date +%s) - start )) s"
