# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_split.sh`), prepared in the tenth
# session (no GPU lent): the batch-1 self attention split over 2 and 4 key ranges against half the
# queries per workgroup (the default, 1 split); the oct kernel's lazy rescale and per-key PV; the cross
# attention's keys per tile; then the full default run and the ss-flow kernel tests on the H200's
# 32-lane subgroups.
for v in "" "--attn-key-splits 2" "--attn-key-splits 4" "--attn-lazy-rescale" "--attn-fused-pv" \
         "--attn-lazy-rescale --attn-fused-pv" "--cross-attn-keys 40" "--cross-attn-keys 80" "--cross-attn-keys 16"; do
  ss_flow_variant ss_flow_split $v
done
ss_flow_full bench_ss_flow
ember_tests --gtest_filter='*SsFlowFlashAttention*:*SsFlowKernels*:*SsFlowModel*' 2>&1 | tee "$OUT/ss_flow_gpu_tests.txt" | grep -E "^\[  (PASSED|FAILED)|FAILED  \]" | head -20
