# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-19e_batch_greedy.sh` (twenty-seventh
# session; ember_base = main at 754d9c2 (the server and bench batch sample greedily in two
# dispatches), ember = main with one dispatch everywhere). `bench batch` at 1 / 4 / 16 sequences,
# greedy, ctx 128, three rounds interleaved, the H200's recorded tune; then the server and
# generation GPU tests.
# Prediction: one dispatch a sequence less a step, ~-3 us each: 1 row +0.8%, 4 rows +1.5%, 16 rows
# +2.5% (16 sampler dispatches of a ~2 ms step).
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2 3; do
  for b in ember_base ember; do bench_batch $b /tmp/h_pack ${b}_$round --rows 1,4,16; done
done
ember_tests --gtest_filter='*Sampler*:Generate*:Server*:Lfm2Batch*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
