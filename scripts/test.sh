#!/usr/bin/env bash
# The test command (README, .ci/run): installs what is missing, builds, runs the whole suite on the
# default WebGPU adapter (lavapipe on machines without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
cd build
ctest --output-on-failure -j "$jobs" --timeout 900
