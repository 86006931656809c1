# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06_unpack.sh`. Three builds: ember_base
# (a744c52: integer-to-float conversions), ember_unpack (23e0302: nibbles unpacked by OR-ing them
# into the bits of 2^23) and ember (65d16d0, also no copies in a decode step: it advances its step
# parameters on the GPU; the generator reads ids back once a submit and binds each step's sampler
# parameters in place), on the recorded tune (bench/results/tuned_runtime.json) of the seed-shape
# pack: bench llm at contexts 128 / 2048 and a per-kernel profile of each. Then the q4 kernel tests
# on this GPU, and a fresh `ember tune --allow-mlp-pair` with the new unpacking and its bench.
rm -rf /tmp/unpack_pack && cp -r "$(seed_pack)" /tmp/unpack_pack && cp bench/results/tuned_runtime.json /tmp/unpack_pack/runtime.json
summary() {  # FILE LABEL
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], 'TTFT %.2f ms' % j['ttft_ms'], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us, wall step %.1f us)' % (c['context'], c['decode_tok_s'], c['step_gpu_us'], c['step_wall_us']) for c in j['contexts']))" "$1" "$2"
}
for b in ember_base ember_unpack ember ember_base ember_unpack ember; do
  $b bench llm --model /tmp/unpack_pack --quiet --context 128,2048 --json > "$OUT/unpack_$b.json" || { echo "$b failed"; continue; }
  summary "$OUT/unpack_$b.json" "$b:"
done
for b in ember_base ember; do
  $b bench llm --model /tmp/unpack_pack --quiet --context 128 --profile --repeats 1 --gen 64 > "$OUT/unpack_profile_$b.txt" 2>&1
  echo "== $b decode profile =="; sed -n '/decode step at context 128/,$p' "$OUT/unpack_profile_$b.txt" | head -12
done
timeout 150 ember_tests --gtest_filter='MatvecQ4*:*MatvecQ4Test*:MatvecBatchQ4*:*MatvecBatchQ4Test*:MlpQ4*:ResidualMlpQ4*:EmbedQ4*:Lfm2Engine*' > "$OUT/unpack_gpu_tests.txt" 2>&1
echo "q4 tests on this GPU (rc $?):"; grep -E "PASSED|FAILED" "$OUT/unpack_gpu_tests.txt" | head -20
rm -rf /tmp/unpack_tuned && cp -r "$(seed_pack)" /tmp/unpack_tuned
ember tune --model /tmp/unpack_tuned --allow-mlp-pair --json > "$OUT/unpack_tune.json" 2> "$OUT/unpack_tune.err"
tail -25 "$OUT/unpack_tune.err"
cp /tmp/unpack_tuned/runtime.json "$OUT/unpack_tuned_runtime.json"
ember bench llm --model /tmp/unpack_tuned --quiet --json > "$OUT/unpack_tuned_bench.json" && summary "$OUT/unpack_tuned_bench.json" "new tune:"
