# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-14_handover.sh`, on branch handover-wait.
# Builds (.dev/base/ember_NAME unless said): ember_base = main; ember (.dev/build) = branch
# attn-merge (the decode attention's quads merged in one barrier, the first K/V round early in the
# one-block kernel); in the residual MLP, all from this branch: ember_words = SLACK all (readers poll
# the tagged words directly, no counter wait); ember_early = SLACK 0 (the counter, as main) with the
# residual reads early (stage 0's x[row] loaded before the dots; stage 2 adds m from workgroup memory,
# staged by stage 1, instead of a scratch round trip after its reduction); ember_wordsearly = both;
# ember_slack48 = lane 0 waits for all but 48 of the 192 workgroups, then the words.
# Why words: a hand-over through the counter is two serial L2 round trips after the producer's last
# store (the counter, then the words); polling the words is one. Run 1 of the thirteenth session
# (per-word polling, 132 workgroups) was -12.7 us a step against its baseline, the counter -8.1 us
# (another machine); per-word polling hurt only large grids (264+), then with 8 tiles held.
# Predictions (H100, gen 256, main's tuned candidate, 192 workgroups): words -0.5 us a hand-over,
# 28 a step: -14 us, +3.5% at ctx 128 (risk: polling contention at 192 workgroups makes it slower);
# early: two memory round trips off each layer's chain, -0.3 to -0.6 us each: -8 to -16 us, +2-4%;
# merge +1.7% at ctx 128, ctx 2048 within noise. No new bench run starts after 460 s.
ember_tests --gtest_filter='AttentionDecode*:Variants/AttentionDecode*:ResidualMlpQ4*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
for round in 1 2; do
  for b in base wordsearly words early merge slack48; do
    if [ $SECONDS -gt 460 ]; then echo "skipped ${b}_$round (time)"; continue; fi
    bin=ember_$b; [ $b = merge ] && bin=ember
    bench_llm $bin /tmp/c_pack ${b}_$round --context 128 2048
  done
done
