# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_gpu_tests.sh`): the ss-flow kernel
# and model tests on the H200's 32-lane subgroups (lavapipe has 8), against the CPU reference.
ember_tests --gtest_filter='*SsFlowFlashAttention*:*SsFlowQMatmul*:*SsFlowKernels*:*SsFlowLayerNorm*:*SsFlowModel*' 2>&1 | tee "$OUT/ss_flow_gpu_tests.txt" | grep -E "^\[  (PASSED|FAILED)|FAILED  \]" | head -20
