# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-20a_mix_in.sh` (twenty-eighth session;
# ember_base = main at 8239118, ember = the residual MLP with the next layer's input matvec as a
# fourth stage, residualMlpMixIn on by default). On any card, the H200's recorded tune: base, the
# mix-in, and the same build with residualMlpMixIn false, three rounds interleaved at ctx 128 and
# 1024; the residual-MLP and seed-shape GPU tests. On an H200 also issue 6's three contexts.
# Prediction: mix-in +3-4% at ctx 128 (13 dispatch boundaries become in-kernel hand-overs, ~1 us
# each); mix-in off = base within noise.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
rm -rf /tmp/h_off && cp -r /tmp/h_pack /tmp/h_off
python3 -c "import json; f='/tmp/h_off/runtime.json'; j=json.load(open(f)); j['candidate']['residualMlpMixIn']=False; json.dump(j,open(f,'w'),indent=1)"
for round in 1 2 3; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 1024
  bench_llm ember /tmp/h_pack mix_$round --context 128 1024
  bench_llm ember /tmp/h_off off_$round --context 128 1024
done
ember_tests --gtest_filter='ResidualMlpQ4.*:Lfm2Engine.*Residual*:Lfm2Engine.SeedShape*:Generate*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
ember bench llm --model /tmp/h_pack --quiet --profile --repeats 1 --gen 64 --context 128 > "$OUT/profile_mix.txt" 2>&1; tail -30 "$OUT/profile_mix.txt"
on_h200 || return 0
bench_llm ember /tmp/h_pack issue6_mix --context 128 1024 2048
bench_llm ember_base /tmp/h_pack issue6_base --context 128 1024 2048
