# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-19_greedy_one.sh` (twenty-seventh
# session; ember_base = main at 284557a (its binary from 5f0653e, no behaviour change since) in
# .dev/base/ember before scripts/device_pack.sh, ember = main with greedy sampling in one dispatch,
# sampler_greedy.wgsl). On any card: both builds with the H200's recorded tune at 128/1024/2048,
# three rounds interleaved, and the sampler/generation GPU tests. On an H200 also a fresh tune,
# benched with both builds (issue 6's figures).
# Prediction: one dependent dispatch boundary less a token, -3 to -4 us a step: +1.0-1.3% at
# ctx 128 (H100 ~2,930 from ~2,895; H200 ~3,050 from ~3,010); TTFT unchanged.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2 3; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 1024 2048
  bench_llm ember /tmp/h_pack one_$round --context 128 1024 2048
done
ember_tests --gtest_filter='*Sampler*:Generate*:Lfm2Engine.SeedShape*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
on_h200 || return 0
tune_pack /tmp/t_pack tune
tail -1 "$OUT/tune.err"
for round in 1 2; do
  bench_llm ember_base /tmp/t_pack tbase_$round --context 128 1024 2048
  bench_llm ember /tmp/t_pack tone_$round --context 128 1024 2048
done
