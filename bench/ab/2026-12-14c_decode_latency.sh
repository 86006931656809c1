# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-14c_decode_latency.sh`, on branch
# decode-latency (handover-wait + attn-merge). Builds: ember_base = main; ember_early = the residual
# MLP's early residual reads alone; ember (.dev/build) = early reads + the attention's one-barrier
# merge (SLACK 0); ember_em24 / 48 / 96 = the same with lane 0 waiting for all but 24 / 48 / 96 of
# the 192 workgroups before the lanes poll the words.
# After runs 14a/b (same day): early +1.0-1.3%, merge +1.0% at ctx 128 (+0.2% at 2048), slack48 alone
# +0.7%, words-only -2.2%. Predictions: early + merge +2.2% at ctx 128 (~2,750 tok/s), +1.2% at 2048;
# slack on top adds ~+0.7%, best near 48; 96 closer to the words-only loss.
ember_tests --gtest_filter='AttentionDecode*:Variants/AttentionDecode*:ResidualMlpQ4*:Lfm2Engine.ResidualMlp*:Lfm2Engine.SeedShapeResidualMlp*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
for round in 1 2 3; do
  for b in base early em em24 em48 em96; do
    if [ $SECONDS -gt 460 ]; then echo "skipped ${b}_$round (time)"; continue; fi
    bin=ember_$b; [ $b = em ] && bin=ember
    bench_llm $bin /tmp/c_pack ${b}_$round --context 128 2048
  done
done
