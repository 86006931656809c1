# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-11_prefetch.sh`, on branch prefetch-latency. Twenty-second
# session; not yet run (no device time left). Builds: .dev/base/ember from main (2a69e11),
# .dev/base/ember_attn from this branch with residual_mlp_q4.wgsl as on main; then device_pack.sh.
# The leave-one-out profile (run 12a, h100_2026-12-06y) put the decode attention at 8.0 us a layer
# in the chain at ctx 128 (floor 3.0) and the residual MLP at 13.9 (floor 10.9). Two latency
# changes, three builds: ember_base (main before them), ember_attn (the attention issues its first
# round of K/V loads before the q loads, norms and the k/v append, instead of after the append),
# ember (that, and the residual MLP loads a next tile's weights right after the dots of the tile
# before, before its reduction and stores, instead of after them).
# Predictions (H100, main's tuned candidate): attention -0.7 to -1 us a layer (one memory round
# trip): ~-5 us a step, +1.3%; residual MLP: the 128 of 192 workgroups that take two gate_up tiles
# save most of a round trip: ~-0.5 us a layer, ~-7 us a step, +2%.
ember_tests --gtest_filter='AttentionDecode*:Variants/AttentionDecode*:ResidualMlpQ4.*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
bench_llm ember_base /tmp/c_pack base_1 --context 128 2048
bench_llm ember /tmp/c_pack both_1 --context 128 2048
bench_llm ember_base /tmp/c_pack base_2 --context 128 2048
bench_llm ember /tmp/c_pack both_2 --context 128 2048
bench_llm ember_attn /tmp/c_pack attn_1 --context 128 2048
