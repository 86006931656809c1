# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-18f_eager_ids.sh` on main at the
# generator's eager read-back (twenty-sixth session). Builds, the H200's recorded tune:
#   ember_base = main at acd0e60 (8 steps a submit, 16 in flight);
#   ember_pick = run 18c's `pick` build (32 / 64, submits growing 1, 1, 2, ...; the CPU records every
#                submit up to 64 steps ahead before it reads the first id back);
#   ember      = the same kernels; ids already back are read before each further submit.
# Question: how much of the bigger submits' gain (runs 18-18e: 32 / 64 +1.3%, 64 / 128 +4% at ctx
# 128 only) is the first id's timestamp arriving late, after the CPU recorded the look-ahead, so
# that decode time misses the steps the GPU ran meanwhile? Prediction: ember at 32 / 64 below
# ember_pick by 1-3%, 64 / 128 no faster than 32 / 64.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 2048
  bench_llm ember_pick /tmp/h_pack pick_$round --context 128 2048
  bench_llm ember /tmp/h_pack eager_$round --context 128 2048
  bench_llm ember /tmp/h_pack eager8_$round --context 128 2048 --per-submit 8 --in-flight 16
  bench_llm ember /tmp/h_pack eager64_$round --context 128 2048 --per-submit 64 --in-flight 128
done
