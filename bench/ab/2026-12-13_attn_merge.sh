# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-13_attn_merge.sh`, on branch attn-merge.
# Builds: .dev/base/ember from main (dced4ac), .dev/base/ember_merge from this branch with the
# first K/V round always loaded after the append (as on main), .dev/build/ember this branch.
# The decode attention's merge of its quads in one barrier instead of five (a workgroup max, a
# workgroup sum, then the dims), and, in the one-block (DIRECT) kernel only, the first K/V round
# issued before the q loads (run 2026-12-11/12: everywhere it gave ctx 128 +0.7%, ctx 2048 -0.8%).
# Predictions (H100, main's tuned candidate, gen 256): merge -0.5 to -1 us a layer at ctx 128
# (512 threads: 16 subgroups), ~-4 us a step, +1%; with the DIRECT load +1.7% at ctx 128; ctx 2048
# (32 blocks of 64 threads: 2 subgroups) within noise.
ember_tests --gtest_filter='AttentionDecode*:Variants/AttentionDecode*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
for round in 1 2 3; do
  bench_llm ember_base /tmp/c_pack base_$round --context 128 2048
  bench_llm ember /tmp/c_pack both_$round --context 128 2048
  bench_llm ember_merge /tmp/c_pack merge_$round --context 128 2048
done
