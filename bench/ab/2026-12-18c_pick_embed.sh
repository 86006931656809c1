# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-18c_pick_embed.sh` on branch
# epilogue-preload (twenty-sixth session). Builds:
#   ember_base = main at acd0e60 (generator 8 a submit, 16 in flight);
#   ember_mv   = the matvec epilogue loads (runs 18 and 18b: +1.1-1.2% on an H100);
#   ember_p32  = mv, one sampler-parameter write a submit, and the generator's new defaults
#                (32 a submit, 64 in flight, submits growing 1, 1, 2, 4, ...);
#   ember      = p32, and the sampler's pick embeds the id it picks (no lookup dispatch a step).
# Predictions (ctx 128, against base): p32 +3.0% (run 18b: 2,796 -> 2,880 on an H100), ember a
# further -3 to -4 us a token (+1%). On an H200 also a fresh tune, benched with base and ember at
# 128/1024/2048 (the figures).
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2 3; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 2048
  bench_llm ember_base /tmp/h_pack base32_$round --context 128 2048 --per-submit 32 --in-flight 64
  bench_llm ember_mv /tmp/h_pack mv_$round --context 128 2048
  bench_llm ember_p32 /tmp/h_pack p32_$round --context 128 2048
  bench_llm ember /tmp/h_pack pick_$round --context 128 2048
done
ember_tests --gtest_filter='Sampler*:Generate*:MatvecQ4*:ResidualMlpQ4*:EmbedQ4*:Lfm2Engine.SeedShape*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
if grep -q '"device": "NVIDIA H200' "$OUT/devices.json" && [ $SECONDS -lt 330 ]; then
  tune_pack /tmp/t_pack tune
  tail -1 "$OUT/tune.err"
  for round in 1 2; do
    bench_llm ember_base /tmp/t_pack tbase_$round --context 128 1024 2048
    bench_llm ember /tmp/t_pack tpick_$round --context 128 1024 2048
  done
fi
