#!/usr/bin/env bash
# Configures and builds ember (Release) into build/. Incremental: a second run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$jobs"
