#!/usr/bin/env bash
# The upstream check (issue 44, item 1) on a machine with a GPU, torch and transformers: for each
# shape, random checkpoints built and saved by transformers (f32 and bf16), packed by `ember pack`,
# dequantized by `ember dequant`, and transformers' forward on dequant's weights under the ORIGINAL
# config.json (float32, so a bf16 checkpoint's config does not make it compute in bf16; see
# README.md) compared module by module with ember's CPU reference and on the logits with ember on
# the GPU: `ember logits` (prefill and --decode, every position) and 64 greedy steps of
# `ember generate --tokens-file`. Prints a table per checkpoint and a summary; exits non-zero if one
# fails.
#
#   tools/golden/device_check.sh [SHAPES]        SHAPES: default tiny,seed,350m,700m,1.2b,2.6b
# Environment: WORK (default /tmp/ember-golden, replaced), LAYERS (keep the first N layers of the
# family shapes, 0 = all), EMBER / CHECK (the ember and ember_golden_check binaries, default from
# PATH), PYTHON (default python3), F64=1 (transformers computes in float64 too: a second, tighter
# golden per checkpoint), TOLERANCE (default 1e-3).
# On the lent GPU machine: `bash scripts/device_pack.sh` here, then in scripts/device_run.sh's
# environment `run:tools/golden/device_check.sh` (it puts .dev/bin on PATH).
set -uo pipefail
cd "$(dirname "$0")/../.."
SHAPES=${1:-tiny,seed,350m,700m,1.2b,2.6b}
WORK=${WORK:-/tmp/ember-golden}
LAYERS=${LAYERS:-0}
EMBER=${EMBER:-ember}
CHECK=${CHECK:-ember_golden_check}
PYTHON=${PYTHON:-python3}
TOLERANCE=${TOLERANCE:-1e-3}
MAKE="$PYTHON tools/golden/make_lfm2_goldens.py"

$PYTHON -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' || {
  echo "device_check: needs torch and transformers (python: $PYTHON)" >&2
  exit 2
}
rm -rf "$WORK" && mkdir -p "$WORK"
# A small byte-level tokenizer: it fits every shape's vocabulary (the tiny one's 512 too).
"$EMBER" synth lfm2 --shape tiny --out "$WORK/tokenizer_source" >/dev/null || exit 2
$MAKE make --out "$WORK/goldens" --shapes "$SHAPES" --layers "$LAYERS" --tokenizer "$WORK/tokenizer_source/tokenizer.json" || exit 2

summary=()
status=0
for shape in ${SHAPES//,/ }; do
  ids="$WORK/goldens/$shape/ids.npy"
  for dtype in f32 bf16; do
    src="$WORK/goldens/$shape/$dtype"
    run="$WORK/runs/$shape-$dtype"
    mkdir -p "$run"
    echo "== $shape $dtype =="
    "$EMBER" pack lfm2 --from "$src" --out "$run/pack" >"$run/pack.log" 2>&1 || { echo "pack failed: $run/pack.log"; status=1; continue; }
    "$EMBER" dequant --model "$run/pack" --out "$run/dequant" >"$run/dequant.log" 2>&1 || { echo "dequant failed"; status=1; continue; }
    goldens=(golden_deq)
    $MAKE record --checkpoint "$run/dequant" --config "$src/config.json" --ids "$ids" --out "$run/golden_deq" || { status=1; continue; }
    if [ "${F64:-0}" = 1 ]; then
      $MAKE record --checkpoint "$run/dequant" --config "$src/config.json" --ids "$ids" --out "$run/golden_deq_f64" --f64 || status=1
      goldens+=(golden_deq_f64)
    fi
    "$EMBER" logits --model "$run/pack" --tokens-file "$ids" --out "$run/prefill.npy" --quiet || status=1
    "$EMBER" logits --model "$run/pack" --tokens-file "$ids" --decode --out "$run/decode.npy" --quiet || status=1
    "$EMBER" generate --model "$run/pack" --tokens-file "$ids" -n 64 --temperature 0 --json --quiet \
      --dump-logits "$run/generate.npy" >"$run/generate.json" || status=1
    for g in "${goldens[@]}"; do
      "$CHECK" --pack "$run/pack" --golden "$run/$g" --tolerance "$TOLERANCE" \
        --logits prefill="$run/prefill.npy" --logits decode="$run/decode.npy" \
        --generate-json "$run/generate.json" --generate-logits "$run/generate.npy" | tee "$run/$g.txt"
      verdict=$(tail -1 "$run/$g.txt")
      [ "$verdict" = PASS ] || status=1
      worst_gpu=$(grep '^gpu \(prefill\|decode\)' "$run/$g.txt" | awk '{print $3}' | sort -g | tail -1)
      worst_cpu=$(grep '^cpu ' "$run/$g.txt" | awk '{print $3}' | sort -g | tail -1)
      summary+=("$(printf '%-6s %-5s %-15s cpu modules worst %-10s gpu logits worst %-10s %s' "$shape" "$dtype" "$g" "$worst_cpu" "$worst_gpu" "$verdict")")
    done
  done
done
echo
echo "== summary (rel L2 against transformers on ember dequant's weights, tolerance $TOLERANCE) =="
printf '%s\n' "${summary[@]}"
exit $status
