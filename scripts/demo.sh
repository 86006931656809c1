#!/usr/bin/env bash
# ember's main job on a built-in default (README's first command): sets up, builds, then runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/ember devices
./build/ember bench gpu --mib 256 --repeats 5
