# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-21a_one_barrier.sh` (twenty-ninth session;
# ember_base = main (9a6b58e's code: the one-row reductions), ember = that and the residual MLP
# counting a stage done right after its last tile's barrier (branch one-barrier, rebuilt: the
# twenty-eighth session's copy did not survive). On an H200 first issue 6's three contexts for main.
# Then on any card, the H200's recorded tune: base and ember, three rounds interleaved at ctx 128
# and 1024.
# Prediction: H200 main ~3,070-3,100 tok/s at ctx 128 (2,906-2,909 in the twenty-fifth session,
# then +3.6%, +0.8%, +1.2% on H100s); one barrier: -0.5 to -1 us a GPU step, within noise in tok/s.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
if on_h200; then
  bench_llm ember_base /tmp/h_pack issue6_main --context 128 1024 2048
fi
for round in 1 2 3; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 1024
  bench_llm ember /tmp/h_pack bar_$round --context 128 1024
done
