# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-17_h200_main.sh` on main at d37d21b or later,
# prepared in the twenty-fifth session for the next device time: the landed residual MLP (read-ahead
# from stage 1, wait slack of a quarter of the grid) on whatever card comes, against main before it.
# Builds: ember = main; ember_base = main at a3fdc34 (put its binary in .dev/base/ember before
# scripts/device_pack.sh). First the H200's recorded tune (bench/results/h200_2026-12-07c), then a
# fresh default tune benched with both builds. Predictions (H200): ember ~2,920 tok/s at ctx 128
# with the recorded tune (+1.7% over ember_base's ~2,873); the fresh tune within 1% of it.
# On an H100: +0.4% (run 16d).
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 2048
  bench_llm ember /tmp/h_pack main_$round --context 128 2048
done
if [ $SECONDS -lt 200 ]; then
  tune_pack /tmp/t_pack tune
  tail -1 "$OUT/tune.err"; grep -E "chosen" "$OUT/tune.txt"
  for round in 1 2; do
    bench_llm ember_base /tmp/t_pack tbase_$round --context 128 1024 2048
    bench_llm ember /tmp/t_pack tmain_$round --context 128 1024 2048
  done
fi
ember_tests --gtest_filter='ResidualMlpQ4*:Lfm2Engine.ResidualMlp*:Lfm2Engine.WeightsInSeveral*:Lfm2Engine.SeedShape*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
