# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-19b_greedy_pair.sh` (twenty-seventh
# session; ember_base = main at 284557a as in run 19, ember = the one-dispatch greedy sampler whose
# partials carry their logits (a tagged pair of words) so the last workgroup reads no logits).
# On any card: five rounds interleaved at ctx 128 and 1024 with the H200's recorded tune, and the
# sampler/generation GPU tests; on an H200 also a fresh tune benched with both builds.
# Run 19 (the first version, which read the logits again) on an H100: ctx 128 inside the noise
# (2,922-2,993 vs 2,929-3,017), ctx 1024 +0.4%, ctx 2048 +0.3%.
# Prediction: +0.6-1% at ctx 128 and 1024 (one dependent load less than run 19's version).
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2 3 4 5; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 1024
  bench_llm ember /tmp/h_pack pair_$round --context 128 1024
done
ember_tests --gtest_filter='*Sampler*:Generate*:Lfm2Engine.SeedShape*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
on_h200 || return 0
tune_pack /tmp/t_pack tune
tail -1 "$OUT/tune.err"
for round in 1 2; do
  bench_llm ember_base /tmp/t_pack tbase_$round --context 128 1024 2048
  bench_llm ember /tmp/t_pack tpair_$round --context 128 1024 2048
done
