# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_oct.sh`): the oct flash attention
# (8 queries per lane octet, 32 FMAs per workgroup-memory load) against the quad default, with its
# options; then a full sampling run with the oct kernel. Per variant: the summary line of
# scripts/ss_flow_summary.py. The 8-key softmax update (--attn-sub8) became the oct kernel's only
# one after the next run, and the flag was removed.
for v in "" "--attention oct" "--attention oct --attn-sub8" "--attention oct --attn-queries 64" "--attention oct --attn-no-prefetch" \
         "--attn-queries 256" "--attention oct --attn-queries 256"; do
  ss_flow_variant ss_flow_oct $v
done
ss_flow_full bench_ss_flow --attention oct
