#!/usr/bin/env bash
# ember's main job on a built-in default (README's first command): sets up, builds, then runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/ember devices
demo=${EMBER_DEMO_DIR:-/tmp/ember-demo}
if [ ! -f "$demo/pack/runtime.json" ]; then
  echo "[demo] synthesizing a seed-shape LFM2 checkpoint with RANDOM weights (the text will be meaningless)"
  ./build/ember synth lfm2 --shape seed --seed 1 --tokenizer tests/fixtures/tokenizers/ember-demo.json --out "$demo/hf"
  ./build/ember pack lfm2 --from "$demo/hf" --out "$demo/pack"
fi
./build/ember generate --model "$demo/pack" --prompt "Once upon a time" -n 64
echo "[demo] for a real model: ./build/ember pack lfm2 --from /path/to/LFM2-hf-checkpoint --out PACK && ./build/ember chat --model PACK"
