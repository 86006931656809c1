# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-19d_h200_main.sh` (twenty-seventh
# session; ember = main at 754d9c2, ember_base = main at 284557a, as in run 19c). Only on an H200
# (elsewhere it stops at once): issue 6's figures for main. Both builds with the H200's recorded
# tune at 128/1024/2048, two rounds; then a fresh `ember tune`, benched with both; GPU tests.
# Prediction: main ~3,040 tok/s at ctx 128 (the twenty-sixth session's +3.6% and this session's
# +0.8% on an H100 over the last H200 figure of 2,906-2,909), ctx 2048 >= 2,650, TTFT ~13.7 ms,
# tune <= 120 s.
on_h200 || return 0
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 1024 2048
  bench_llm ember /tmp/h_pack main_$round --context 128 1024 2048
done
tune_pack /tmp/t_pack tune
tail -1 "$OUT/tune.err"
for round in 1 2; do
  bench_llm ember_base /tmp/t_pack tbase_$round --context 128 1024 2048
  bench_llm ember /tmp/t_pack tmain_$round --context 128 1024 2048
done
ember_tests --gtest_filter='*Sampler*:Generate*:MatvecQ4*:ResidualMlpQ4*:EmbedQ4*:Lfm2Engine.SeedShape*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
