# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_oct_sweep.sh`): options around the
# oct flash attention with 8-key softmax updates (tile prefetch, keys per tile), the qmatmul double
# buffer and the GELU epilogue, against the quad default; then full sampling runs (the double buffer
# measured slower and was removed after this run, so its two variants no longer parse). The timestep
# path's matmuls are split-K in every variant. Per variant: the summary line of
# scripts/ss_flow_summary.py. --attn-sub8 was removed after this run (its 8-key update is the oct
# kernel's only one); oct is the default since.
O="--attention oct --attn-sub8"
for v in "" "$O" "$O --attn-no-prefetch" "$O --attn-keys 16" "$O --attn-keys 64" "$O --matmul-double-buffer" \
         "$O --fuse-gelu" "$O --matmul-double-buffer --matmul 8 16 16"; do
  ss_flow_variant ss_flow_sw $v
done
for v in "$O" "$O --matmul-double-buffer"; do ss_flow_full bench_ss_flow $v; done
