# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_square.sh`): the new default
# (oct attention, GELU applied as mlp.2 stores its X tile, subgroup head norm, LayerNorm with 8 lanes
# a row, mlp.0 at 16 rows a thread) against the GELU pass and mlp.0 at 8 rows, and geometries of the
# 768 x 768 matmuls with and without split-K; then the full default run.
# After this run --square-matmul became --narrow-matmul and --gelu was removed (the pass is the default).
for v in "" "--gelu pass" "--mlp0-rows 8" "--square-splits 1 --square-matmul 8 16 16" "--square-splits 1 --square-matmul 16 8 16" \
         "--square-matmul 8 16 16"; do
  ss_flow_variant ss_flow_sq $v
done
ss_flow_full bench_ss_flow
