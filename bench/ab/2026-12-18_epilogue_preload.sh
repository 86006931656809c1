# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-18_epilogue_preload.sh` on branch
# epilogue-preload (twenty-sixth session). Builds, all with the H200's recorded tune:
#   ember_base = main at acd0e60;
#   ember_mv   = the decode matvec loads its epilogue's operands (conv state and taps, the value
#                accumulated onto, the head's zero points) with its weights, not after the reduction;
#   ember_rm   = the residual MLP loads stage 1's norm weight before its wait, not after;
#   ember_ab   = both;
#   ember      = both, and the residual MLP's read-ahead also takes the next mix-in's norm weight.
# Predictions (ctx 128): mv -4 to -9 us a step (+1.2-2.5%); rm 0 to -14 us (0 if the driver already
# hoisted the load); the norm read-ahead -0.3 us a layer (~-4 us, +1%).
# Then the generator's steps a submit (per-submit / in-flight) with ember: 8/16 (default), 16/32,
# 32/64, 8/32 (depth without batching). Prediction: ~45 us a submit (H100, 2026-12-06): 16/32
# +0.8%, 32/64 +1.2%, 8/32 as 8/16.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2 3; do
  for b in base mv rm ab; do bench_llm ember_$b /tmp/h_pack ${b}_$round --context 128 2048; done
  bench_llm ember /tmp/h_pack all_$round --context 128 2048
done
for round in 1 2; do
  bench_llm ember /tmp/h_pack s16x32_$round --context 128 2048 --per-submit 16 --in-flight 32
  bench_llm ember /tmp/h_pack s32x64_$round --context 128 2048 --per-submit 32 --in-flight 64
  bench_llm ember /tmp/h_pack s8x32_$round --context 128 2048 --per-submit 8 --in-flight 32
done
ember_tests --gtest_filter='MatvecQ4*:ResidualMlpQ4*:Lfm2Engine.ResidualMlp*:Lfm2Engine.SeedShape*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
