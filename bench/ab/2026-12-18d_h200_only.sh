# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-18d_h200_only.sh` on main (twenty-sixth
# session; ember_base = main at acd0e60 in .dev/base/ember before scripts/device_pack.sh, ember =
# main with the session's changes). Runs only on an H200 (elsewhere it stops at once: run
# 18c measured these builds on an H100). With the H200's recorded tune, then a fresh tune, each
# benched with both builds at 128/1024/2048, two rounds. Prediction: ember ~3,030 tok/s at ctx
# 128 (+3.6% over base, as on the H100 in run 18c), ctx 2048 >= 2,650, TTFT ~13.7 ms; 64 steps a
# submit (128 in flight) a further +0.2% (~50 us a submit shared by 64 instead of 32).
on_h200 || return 0
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 1024 2048
  bench_llm ember /tmp/h_pack pick_$round --context 128 1024 2048
done
tune_pack /tmp/t_pack tune
tail -1 "$OUT/tune.err"
for round in 1 2; do
  bench_llm ember_base /tmp/t_pack tbase_$round --context 128 1024 2048
  bench_llm ember /tmp/t_pack tpick_$round --context 128 1024 2048
done
bench_llm ember /tmp/t_pack tpick64_1 --context 128 1024 2048 --per-submit 64 --in-flight 128
ember_tests --gtest_filter='Sampler*:Generate*:MatvecQ4*:ResidualMlpQ4*:EmbedQ4*:Lfm2Engine.SeedShape*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
