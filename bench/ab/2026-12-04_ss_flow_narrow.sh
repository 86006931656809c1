# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_narrow.sh`): the matmuls with 768
# output rows at 128 x 64 tiles (the C x C ones unsplit), mlp.2's split-K count with them, the GELU
# pass as vec4 with the one-exp formula, and the GELU epilogue retried with that formula; then the
# full default run.
for v in "" "--mlp2-splits 1" "--mlp2-splits 4" "--fuse-gelu" "--narrow-matmul 16 16 16 --square-splits 2"; do
  ss_flow_variant ss_flow_nw $v
done
ss_flow_full bench_ss_flow
