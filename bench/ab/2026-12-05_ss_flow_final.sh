# Sourced by scripts/device_run.sh after `ss-flow seed-check` (the default run and the seed-config
# check with this session's defaults: key splits 2, lazy rescale, cross-attention tiles of 40, mlp.2
# at 16 rows a thread at batch 2): `run:bench/ab/2026-12-05_ss_flow_final.sh`. mlp.2 at batch 1 at
# 16 rows a thread (the rule keeps 8 there, unmeasured), the previous session's defaults for
# comparison on the same card, then the ss-flow kernel tests on this GPU's subgroups.
python3 scripts/ss_flow_summary.py "$OUT/bench_ss_flow.json" "default (full run)"
for v in "" "--matmul-override mlp.2+gate@1=16,16,16,4,16" "--mlp2-rows 8"; do
  ss_flow_variant ss_flow_final $v
done
ss_flow_full ss_flow_prev --attn-key-splits 1 --attn-no-lazy-rescale --cross-attn-keys 32 --mlp2-rows 8
ember_tests --gtest_filter='*SsFlowFlashAttention*:*SsFlowKernels*:*SsFlowModel*:*SsFlowSampler*' 2>&1 | tee "$OUT/ss_flow_gpu_tests.txt" | grep -E "^\[  (PASSED|FAILED)|FAILED  \]" | head -20
