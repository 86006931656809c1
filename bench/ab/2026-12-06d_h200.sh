# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06d_h200.sh`. Main as it lands
# (nibble unpacking back, no copies in a decode step, streaming head reverted) on whatever card
# comes: bench llm of the recorded tune (bench/results/tuned_runtime.json) and of the H100 tune
# (bench/ab/h100_tuned_runtime_2026-12-06.json), then a default `ember tune` on this card and
# bench llm of its candidate (also at 8 steps a submit), then the kernel and engine tests on the GPU.
with_runtime bench/results/tuned_runtime.json /tmp/d_rec && bench_llm ember /tmp/d_rec recorded
with_runtime bench/ab/h100_tuned_runtime_2026-12-06.json /tmp/d_h100 && bench_llm ember /tmp/d_h100 h100_tune
tune_pack /tmp/d_tuned d_tune
grep -E "ember tune on|residual|wall" "$OUT/d_tune.err" | head -4
bench_llm ember /tmp/d_tuned tuned
# Generator submits: 8 steps a submit with 16 in flight against the defaults (4, 8), which gained
# 3.9% over 1 a submit on the H100 (2026-12-05). Prediction: +1% (the gap between submits halves).
bench_llm ember /tmp/d_tuned tuned_submit8 --per-submit 8 --in-flight 16
bench_llm ember /tmp/d_tuned tuned_submit4 --per-submit 4 --in-flight 8
bench_llm ember /tmp/d_rec recorded_again
ember bench llm --model /tmp/d_tuned --quiet --profile --repeats 1 --gen 64 > "$OUT/d_profile_tuned.txt" 2>&1
timeout 150 ember_tests --gtest_filter='MatvecQ4*:ResidualMlpQ4*:Lfm2Engine.SeedShape*:Generate*' > "$OUT/d_gpu_tests.txt" 2>&1; tail -3 "$OUT/d_gpu_tests.txt"
