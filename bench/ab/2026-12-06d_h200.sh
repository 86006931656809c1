# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06d_h200.sh`. Main as it lands
# (nibble unpacking back, no copies in a decode step, streaming head reverted) on whatever card
# comes: bench llm of the recorded tune (bench/results/tuned_runtime.json) and of the H100 tune
# (bench/ab/h100_tuned_runtime_2026-12-06.json), then a default `ember tune` on this card and
# bench llm of its candidate, then the kernel and engine tests on the GPU.
summary() {  # FILE LABEL
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], j['device']['device'] + ',', '%d dispatches,' % j['dispatches_per_token'], 'TTFT %.2f ms' % j['ttft_ms'], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us)' % (c['context'], c['decode_tok_s'], c['step_gpu_us']) for c in j['contexts']))" "$1" "$2"
}
bench() {  # PACK NAME
  ember bench llm --model "$1" --quiet --json > "$OUT/d_$2.json" 2> "$OUT/d_$2.err" && summary "$OUT/d_$2.json" "$2:" || { echo "$2 failed:"; tail -3 "$OUT/d_$2.err"; }
}
with_runtime() {  # RUNTIME_JSON DIR
  rm -rf "$2" && cp -r "$(seed_pack)" "$2" && cp "$1" "$2/runtime.json"
}
with_runtime bench/results/tuned_runtime.json /tmp/d_rec && bench /tmp/d_rec recorded
with_runtime bench/ab/h100_tuned_runtime_2026-12-06.json /tmp/d_h100 && bench /tmp/d_h100 h100_tune
rm -rf /tmp/d_tuned && cp -r "$(seed_pack)" /tmp/d_tuned
/usr/bin/time -f "tune wall %e s" ember tune --model /tmp/d_tuned > "$OUT/d_tune.txt" 2> "$OUT/d_tune.err"
grep -E "ember tune on|residual|wall" "$OUT/d_tune.err" | head -4
cp /tmp/d_tuned/runtime.json "$OUT/d_tuned_runtime.json"
bench /tmp/d_tuned tuned
bench /tmp/d_rec recorded_again
ember bench llm --model /tmp/d_tuned --quiet --profile --repeats 1 --gen 64 > "$OUT/d_profile_tuned.txt" 2>&1
timeout 150 ember_tests --gtest_filter='MatvecQ4*:ResidualMlpQ4*:Lfm2Engine.SeedShape*:Generate*' > "$OUT/d_gpu_tests.txt" 2>&1; tail -3 "$OUT/d_gpu_tests.txt"
