# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-14e_last_call.sh` on main (c8970a0 or
# later), the session's last device call: same builds as 2026-12-14c (ember_base = main before the
# early residual reads and the attention merge; ember = main with both; ember_em48 = that with lane
# 0's wait slack of 48 workgroups), two rounds at ctx 128 / 2048, then a fresh default `ember tune`
# with main's kernels and two benches of its pack. Predictions (H100): ember +2% over ember_base at
# ctx 128; em48 a further +0.7%; the fresh tune within 1% of the recorded one. On an H200: ctx 128
# ~2,850 tok/s (H100 x 1.04, the 2026-12-04/05 ratio), still short of 3,000.
ember_tests --gtest_filter='AttentionDecode*:Variants/AttentionDecode*:ResidualMlpQ4*:Lfm2Engine.ResidualMlp*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
for round in 1 2; do
  for b in base em em48; do
    bin=ember_$b; [ $b = em ] && bin=ember
    bench_llm $bin /tmp/c_pack ${b}_$round --context 128 2048
  done
done
if [ $SECONDS -lt 100 ]; then
  tune_pack /tmp/t_pack tune
  tail -1 "$OUT/tune.err"
  for round in 1 2; do bench_llm ember /tmp/t_pack tuned_$round --context 128 1024 2048; done
fi
