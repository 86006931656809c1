#!/usr/bin/env bash
# The CPU-adapter figures of issue 50 on this machine's default adapter (lavapipe where there is no
# GPU): builds the seed-shape pack once under build/cpu_bench, then prints
#   - decode tok/s (median of REPEATS `ember generate` runs of GEN tokens),
#   - the bandwidth floor: weight bytes one decode step reads / `ember bench gpu`'s read bandwidth,
#   - decode as a fraction of that floor,
#   - time to first token for a 16-token prompt, wall clock from process start (weights loaded,
#     kernels compiled, prompt run, first id back), on a first run (an empty Mesa shader cache, the
#     only compiled-kernel cache a run keeps today) and a second run (the cache that first run
#     left), plus ember's own ttft_ms (prompt to first id, kernels already compiled).
# Usage: scripts/cpu_bench.sh [extra flags for every ember command, e.g. --device 0]
# Environment: REPEATS (default 3), GEN (default 32), PACK (default build/cpu_bench/pack: a pack
# dir to measure instead, e.g. a tuned copy).
set -euo pipefail
cd "$(dirname "$0")/.."
EMBER=${EMBER:-build/ember}
REPEATS=${REPEATS:-3}
GEN=${GEN:-32}
DIR=build/cpu_bench
PACK=${PACK:-$DIR/pack}
mkdir -p "$DIR"
if [ ! -f "$PACK/runtime.json" ]; then
  [ -d "$DIR/ckpt" ] || "$EMBER" synth lfm2 --shape seed --out "$DIR/ckpt"
  "$EMBER" pack lfm2 --from "$DIR/ckpt" --out "$PACK"
fi
echo "load: $(uptime)"
PROMPT="the cat sat on a mat"  # 16 tokens with the synthetic pack's tokenizer (--raw: no BOS)
median() { python3 -c 'import sys,statistics; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

gbps=$("$EMBER" bench gpu --json "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ceilings"]["read_gbps"])')
bytes=$(python3 - "$PACK/runtime.json" <<'PY'
import json, sys
rt = json.load(open(sys.argv[1]))["runtime"]
# One decode step reads every matrix once: each layer's two matrices, gate_up and down (the pack's
# down.quant copy; a fused-MLP candidate reads kquant instead, the same size) and the head (the
# embedding row is negligible).
# embed.* aliases head.* (the same offsets): count each byte range once.
print(sum({s["offset"]: s["bytes"] for s in rt["sections"]
           if s["name"].endswith((".quant", ".scales", ".zero_points")) and ".kquant" not in s["name"]}.values()))
PY
)

ttft_run() {  # prints "wall_ms ttft_ms prompt_tokens" of one 1-token generate with Mesa's cache in $1
  local t0 t1 out
  t0=$(date +%s%N)
  out=$(MESA_SHADER_CACHE_DIR="$1" "$EMBER" generate --model "$PACK" --raw -p "$PROMPT" -n 1 --json --quiet "${@:2}")
  t1=$(date +%s%N)
  echo "$(( (t1 - t0) / 1000000 )) $(echo "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["ttft_ms"], j["prompt_tokens"])')"
}
cache=$(mktemp -d "$DIR/shader_cache.XXXXXX")
first=$(ttft_run "$cache" "$@")
second=$(ttft_run "$cache" "$@")
rm -rf "$cache"

rates=()
for _ in $(seq "$REPEATS"); do
  rates+=("$("$EMBER" generate --model "$PACK" --raw -p "$PROMPT" -n "$GEN" --json --quiet "$@" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["decode_tok_s"])')")
done
tok_s=$(median "${rates[@]}")
python3 - "$tok_s" "$gbps" "$bytes" "$first" "$second" "${rates[*]}" <<'PY'
import sys
tok_s, gbps, nbytes = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
first, second = sys.argv[4].split(), sys.argv[5].split()
floor_tok_s = gbps * 1e9 / nbytes
print(f"decode              {tok_s:8.2f} tok/s   (median of {sys.argv[6]})")
print(f"bandwidth floor     {floor_tok_s:8.2f} tok/s   ({nbytes / 1e6:.1f} MB per token at {gbps:.2f} GB/s, ember bench gpu)")
print(f"decode / floor      {tok_s / floor_tok_s:8.1%}")
print(f"TTFT, first run     {float(first[0]) / 1e3:8.2f} s       (process start to first id; ember's ttft_ms {float(first[1]):.0f}, prompt {first[2]} tokens)")
print(f"TTFT, second run    {float(second[0]) / 1e3:8.2f} s       (warm shader cache; ember's ttft_ms {float(second[1]):.0f})")
PY
