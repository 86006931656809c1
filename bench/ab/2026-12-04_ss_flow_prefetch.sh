# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_prefetch.sh`): the qmatmul
# register prefetch of the next K step (default now) against plain loads, qmatmul geometries with
# it, and the quad attention (slot order by lane, base-2 softmax) at 64 keys per tile. Then the full
# default run. Per variant: the summary line of scripts/ss_flow_summary.py.
for v in "" "--matmul-no-prefetch" "--matmul 16 16 32" "--matmul 8 16 16" "--matmul 16 8 16" "--attn-keys 64"; do
  ss_flow_variant ss_flow_pf $v
done
