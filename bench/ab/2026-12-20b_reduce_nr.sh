# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-20b_reduce_nr.sh` (twenty-eighth session;
# ember_base = main at 8239118, ember = main + the residual MLP's one-row stages reducing one row,
# ember_mixbranch = run 20a's build (branch mix-in-stage at e0855bf), run with residualMlpMixIn
# false). On an H200 first issue 6's three contexts with ember. Then on any card, the H200's
# recorded tune, three rounds interleaved at ctx 128 and 1024, and the residual-MLP GPU tests.
# Run 20a (H100): the mix-in branch with the mix-in off decoded -3 us a GPU step against base.
# Prediction: ember = the branch off (both -3 us a step, +1-2% tok/s), from the one-row reductions.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
rm -rf /tmp/h_off && cp -r /tmp/h_pack /tmp/h_off
python3 -c "import json; f='/tmp/h_off/runtime.json'; j=json.load(open(f)); j['candidate']['residualMlpMixIn']=False; json.dump(j,open(f,'w'),indent=1)"
if on_h200; then bench_llm ember /tmp/h_pack issue6_main_1 --context 128 1024 2048; fi
for round in 1 2 3; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 1024
  bench_llm ember /tmp/h_pack nr_$round --context 128 1024
  bench_llm ember_mixbranch /tmp/h_off off_$round --context 128 1024
done
ember_tests --gtest_filter='ResidualMlpQ4.*:Lfm2Engine.*Residual*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
on_h200 || return 0
bench_llm ember_base /tmp/h_pack issue6_base --context 128 1024 2048
bench_llm ember /tmp/h_pack issue6_main_2 --context 128 1024 2048
