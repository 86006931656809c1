# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_rows16.sh`): the ss-flow kernel
# tests on the H200 (oct attention and the subgroup head norm on 32-lane subgroups), then the new
# default (oct attention, GELU in mlp.2's X loads, subgroup head norm) against the GELU pass and
# qmatmul at 16 rows a thread; then the full default run.
# After this run the GELU in the X loads measured no faster than the pass and was removed (so
# --gelu no longer parses); the pass is the default.
ember_tests --gtest_filter='*SsFlowFlashAttention*:*SsFlowQMatmul*:*SsFlowKernels*:*SsFlowModel*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|FAILED  \]" | head -20
for v in "" "--gelu pass" "--matmul-rows 16" "--matmul-rows 16 --mlp2-splits 4" "--matmul 16 8 16 --matmul-rows 16"; do
  ss_flow_variant ss_flow_r16 $v
done
ss_flow_full bench_ss_flow
