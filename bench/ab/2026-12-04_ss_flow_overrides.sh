# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_overrides.sh`), prepared in the
# tenth session (no GPU lent): the batch-2 matmuls whose tile counts leave a partial last wave, at
# other geometries through --matmul-override. to_qkv (2304 rows): 1152 tiles of 128 x 128 at batch 2
# (4.4 waves of 2 a SM); mlp.2 (K = 3072) at 16 rows a thread; the stacked adaLN unsplit.
for v in "" "--matmul-override self_attn.to_qkv@2=16,8,16" "--matmul-override self_attn.to_qkv@2=16,16,16,2" \
         "--matmul-override mlp.2+gate@2=16,16,16,2,16" "--matmul-override mlp.2+gate@2=16,16,16,3" \
         "--matmul-override mlp.0@2=16,16,16,1,8" "--matmul-override adaLN_modulation=4,16,16"; do
  ss_flow_variant ss_flow_ovr $v
done
