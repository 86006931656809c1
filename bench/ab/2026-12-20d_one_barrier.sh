# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-20d_one_barrier.sh` (twenty-eighth
# session; ember_base = main with the one-row reductions (0eea281), ember = that and the residual
# MLP counting a stage done right after its last tile's barrier (branch one-barrier), ember_old =
# main at 8239118). On an H200 first issue 6's three contexts (main, then old). Then on any card,
# the H200's recorded tune: base and ember, three rounds interleaved at ctx 128 and 1024.
# Prediction: H200 main ~3,070-3,100 tok/s at ctx 128; one barrier: -0.5 to -1 us a GPU step
# (28 barriers off the hand-overs' chain), within noise in tok/s.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
if on_h200; then
  bench_llm ember_base /tmp/h_pack issue6_main --context 128 1024 2048
  bench_llm ember_old /tmp/h_pack issue6_old --context 128 1024 2048
fi
for round in 1 2 3; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 1024
  bench_llm ember /tmp/h_pack bar_$round --context 128 1024
done
