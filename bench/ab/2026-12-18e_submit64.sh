# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-18e_submit64.sh` on main at d9ef3f1 (the
# bundle of run 18c: ember = main's code). 32 steps a submit with 64 in flight (the new default)
# against 64 with 128, three rounds, the H200's recorded tune. Prediction: +0.2-0.4% at ctx 128
# (the ~50 us a submit shared by 64 steps instead of 32: -0.8 us a token).
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2 3; do
  bench_llm ember /tmp/h_pack s32_$round --context 128 2048
  bench_llm ember /tmp/h_pack s64_$round --context 128 2048 --per-submit 64 --in-flight 128
done
