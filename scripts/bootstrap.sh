#!/usr/bin/env bash
# Installs what is missing (Debian packages), configures and builds QLA.
# Usage: scripts/bootstrap.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}

PKGS="llvm-22-dev libmlir-22-dev mlir-22-tools libfmt-dev catch2 ninja-build ccache cmake g++ libzstd-dev lld python3"
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "== installing:$missing"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
if [ ! -f /usr/local/cuda/include/nvrtc.h ]; then
  echo "error: the CUDA 13 toolkit is needed at /usr/local/cuda (NVRTC, cuda.h, ptxas)" >&2
  exit 1
fi

export CCACHE_SLOPPINESS=pch_defines,time_macros
echo "== configuring ($BUILD)"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
echo "== building ($(nproc) cores)"
start=$(date +%s)
ninja -C "$BUILD"
echo "== build done in $(( $(date +%s) - start )) s"
