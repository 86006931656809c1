# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06_steps.sh` (seventeenth session).
# Run 2 of the seventeenth session adds a warm-up before the whole-step timing. The tuner's whole-step rounds (the one-dispatch layer's 5 fastest grids, the head's 3 fastest
# geometries, the one-block attention's 3 fastest widths, each round timed over whole decode steps).
# Two fresh tunes against the H100 tune of 2026-12-06 (2,647-2,673 tok/s at ctx 128 this session)
# and the same with a 256-thread attention (2,685-2,690 in the fifteenth session). Prediction: both
# tunes within 1% of the better hand-made candidate, and within 1% of each other (earlier tunes of
# one build: 2,472-2,627); wall <= 120 s.
with_runtime bench/ab/h100_tuned_runtime_2026-12-06.json /tmp/s_h100 && bench_llm ember /tmp/s_h100 h100_tune
python3 -c "import json; p='/tmp/s_h100/runtime.json'; j=json.load(open(p)); j['candidate']['flashDirectWorkgroup']=256; json.dump(j, open(p,'w'), indent=1)"
bench_llm ember /tmp/s_h100 h100_tune_attn256
for n in 1 2; do
  tune_pack /tmp/s_tuned$n s_tune$n
  grep -E "step|wall" "$OUT/s_tune$n.err" | head -16
  bench_llm ember /tmp/s_tuned$n tuned$n
done
bench_llm ember /tmp/s_h100 h100_tune_attn256_again
timeout 120 ember_tests --gtest_filter='Tune.*:AttentionDecode.*:Lfm2Engine.SeedShapeDecodeNorms*' > "$OUT/s_gpu_tests.txt" 2>&1; grep -E "FAILED|PASSED" "$OUT/s_gpu_tests.txt" | tail -6
