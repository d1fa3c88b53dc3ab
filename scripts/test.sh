#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs the whole test
# suite through ctest (the test count is printed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 600
