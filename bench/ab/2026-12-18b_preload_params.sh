# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-18b_preload_params.sh` on branch
# epilogue-preload at ae5b878 (twenty-sixth session). Builds, all with the H200's recorded tune:
#   ember_base = main at acd0e60;
#   ember_mv   = the decode matvec loads its epilogue's operands with its weights (run 18: +1.2% on
#                an H100);
#   ember_mvc  = mv, and the residual MLP's read-ahead also takes the next mix-in's norm weight, its
#                ranges addressed by selects (run 18's loop over ranges cost 2 us a step);
#   ember_mvp  = mv, and the generator writes a submit's sampler parameters with one queue write;
#   ember      = all three.
# Predictions (ctx 128): mvc -3 to -4 us a step against mv; mvp: if the ~50 us a submit that run 18
# measured is the per-step queue writes, -4 to -5 us a token (+1.3%), else nothing.
# Then 16/32 and 32/64 steps a submit with ember, and on an H200 a fresh tune benched with
# ember_base and ember at 128/1024/2048 (the figures).
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2 3; do
  for b in base mv mvc mvp; do bench_llm ember_$b /tmp/h_pack ${b}_$round --context 128 2048; done
  bench_llm ember /tmp/h_pack all_$round --context 128 2048
done
for round in 1 2; do
  bench_llm ember /tmp/h_pack s16x32_$round --context 128 2048 --per-submit 16 --in-flight 32
  bench_llm ember /tmp/h_pack s32x64_$round --context 128 2048 --per-submit 32 --in-flight 64
done
ember_tests --gtest_filter='MatvecQ4*:ResidualMlpQ4*:Generate.*:Lfm2Engine.ResidualMlp*:Lfm2Engine.SeedShape*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
if grep -q '"device": "NVIDIA H200' "$OUT/devices.json" && [ $SECONDS -lt 330 ]; then
  tune_pack /tmp/t_pack tune
  tail -1 "$OUT/tune.err"
  for round in 1 2; do
    bench_llm ember_base /tmp/t_pack tbase_$round --context 128 1024 2048
    bench_llm ember /tmp/t_pack tall_$round --context 128 1024 2048
    bench_llm ember /tmp/t_pack tall32_$round --context 128 1024 2048 --per-submit 32 --in-flight 64
  done
fi
