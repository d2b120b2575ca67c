#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test. GPU tests (ctest
# label "gpu") run where a GPU is present and print SKIP with the reason where
# not. Then installs the build to a temporary prefix and builds and runs
# examples/consumer against it with find_package(qla) (scripts/check_install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
scripts/bootstrap.sh "$BUILD"
echo "== tests"
ctest --test-dir "$BUILD" --output-on-failure -j2
scripts/check_install.sh "$BUILD"
