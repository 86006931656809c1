#!/usr/bin/env bash
# Aggregate decode throughput of `ember serve` with 1, 4 and 16 concurrent sequences (continuous
# batching), on the seed-000 shape with synthesized weights. Run on the lent GPU machine after
# scripts/device_run.sh has set up Vulkan (or anywhere with `ember` and `serve_load` on PATH).
#   bash bench/serve_throughput.sh OUTDIR
# SHAPE=tiny MAX_TOKENS=16 give a quick local check of the script itself (lavapipe: no figures).
# Per concurrency it prints the aggregate tokens/s and, from the server's /metrics, the decode
# steps and how many sequence decodes ran in the batched decoder (rows per batched step =
# batched rows / steps when every step was batched).
set -euo pipefail
OUT=${1:-/tmp/ember-serve-bench}
SHAPE=${SHAPE:-seed}
MAX_TOKENS=${MAX_TOKENS:-256}
mkdir -p "$OUT"
W=$(mktemp -d)
ember synth lfm2 --shape "$SHAPE" --seed 1 --out "$W/hf" > /dev/null
ember pack lfm2 --from "$W/hf" --out "$W/pack" > /dev/null
ember serve --model "$W/pack" --port 0 --parallel 16 --queue 64 --quiet > "$W/serve.out" 2> "$OUT/serve.err" &
SERVER=$!
for i in $(seq 1 600); do grep -q listening "$W/serve.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$W/serve.out")
metrics() {
  if command -v curl > /dev/null; then curl -s "http://127.0.0.1:$PORT/metrics"
  else python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())" "http://127.0.0.1:$PORT/metrics"; fi
}
metric() { metrics | awk -v k="$1" '$1 == k { print $2 }'; }
serve_load --port "$PORT" --requests 4 --concurrency 4 --stream 0 --max-tokens 16 > /dev/null  # warm-up
for c in 1 4 16; do
  steps0=$(metric ember_decode_steps_total); rows0=$(metric ember_batched_decode_rows_total)
  serve_load --port "$PORT" --requests $((c * 2)) --concurrency $c --stream 0 --max-tokens "$MAX_TOKENS" --temperature 1 --pid $SERVER \
    > "$OUT/throughput_c$c.json"
  steps1=$(metric ember_decode_steps_total); rows1=$(metric ember_batched_decode_rows_total)
  echo "concurrency $c: $(grep -o '"aggregate_tokens_per_s": [0-9.]*' "$OUT/throughput_c$c.json"), $(grep -o '"completion_tokens": [0-9]*' "$OUT/throughput_c$c.json"), decode steps $((steps1 - steps0)), batched rows $((rows1 - rows0))"
done
serve_load --port "$PORT" --requests 500 --concurrency 32 --stream 0.5 --max-tokens 32 --temperature 1 --pid $SERVER > "$OUT/load_500x32.json" || true
echo "load 500x32: $(tr -d '\n' < "$OUT/load_500x32.json" | grep -o '"errors": [0-9]*\|"statuses": {[^}]*}\|"server_vmrss_kb_[a-z]*": [0-9]*' | tr '\n' ' ')"
metrics > "$OUT/metrics.txt" || true
kill -TERM $SERVER; wait $SERVER || true
rm -rf "$W"
