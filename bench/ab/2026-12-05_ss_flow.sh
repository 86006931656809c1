# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-05_ss_flow.sh`), eleventh session: the tenth
# session's untimed options in one run (it had no GPU). Batch-1 self attention over 2 and 4 key ranges;
# the oct kernel's lazy rescale and per-key PV; the cross attention's keys per tile; the batch-2 matmuls
# with a partial last wave at other geometries (--matmul-override); the default again (drift); then
# the full default run (steps now queued one ahead; a guided step's
# context-free prefix at batch 1), one full run with a guessed combination, and the
# ss-flow kernel tests on the H200's 32-lane subgroups.
for v in "" "--attn-key-splits 2" "--attn-key-splits 4" "--attn-lazy-rescale" "--attn-fused-pv" \
         "--attn-lazy-rescale --attn-fused-pv" "--attn-key-splits 2 --attn-lazy-rescale" \
         "--cross-attn-keys 40" "--cross-attn-keys 80" "--cross-attn-keys 16"; do
  ss_flow_variant ss_flow_split $v
done
for v in "--matmul-override self_attn.to_qkv@2=16,8,16" "--matmul-override self_attn.to_qkv@2=16,16,16,2" \
         "--matmul-override mlp.2+gate@2=16,16,16,2,16" "--matmul-override mlp.2+gate@2=16,16,16,3" \
         "--matmul-override mlp.0@2=16,16,16,1,8" "--matmul-override adaLN_modulation=4,16,16" ""; do
  ss_flow_variant ss_flow_ovr $v
done
ss_flow_full bench_ss_flow
ss_flow_full bench_ss_flow_combo --attn-key-splits 2 --attn-lazy-rescale --cross-attn-keys 40
ember_tests --gtest_filter='*SsFlowFlashAttention*:*SsFlowKernels*:*SsFlowModel*:*SsFlowSampler*' 2>&1 | tee "$OUT/ss_flow_gpu_tests.txt" | grep -E "^\[  (PASSED|FAILED)|FAILED  \]" | head -20
