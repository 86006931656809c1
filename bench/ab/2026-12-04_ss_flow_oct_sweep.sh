# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_oct_sweep.sh`): options around the
# oct flash attention with 8-key softmax updates (tile prefetch, keys per tile), the qmatmul double
# buffer and the GELU epilogue, against the quad default; then full sampling runs (the double buffer
# measured slower and was removed after this run, so its two variants no longer parse). The timestep
# path's matmuls are split-K in every variant. Per variant: b1 / b2 forward wall, matmuls and self
# attention summed over the blocks.
O="--attention oct --attn-sub8"
for v in "" "$O" "$O --attn-no-prefetch" "$O --attn-keys 16" "$O --attn-keys 64" "$O --matmul-double-buffer" \
         "$O --fuse-gelu" "$O --matmul-double-buffer --matmul 8 16 16"; do
  name=$(echo "x$v" | tr ' ' '_' | tr -d '-')
  ember bench ss-flow --synthetic --gpu-fast --json --no-sample --repeats 3 $v > "$OUT/ss_flow_sw_$name.json" || { echo "$v failed" >&2; continue; }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); f=lambda b: {e['kernel']: e['total_ms'] for e in j[b]['kernels']}; mm=lambda b: sum(v for n,v in f(b).items() if n.startswith(('mlp.0','mlp.2','self_attn.to_','cross_attn.to_'))); at=lambda b: f(b).get('self_attn.flash',0); print('%-58s b1 %.2f ms (mm %.2f, attn %.2f, adaLN %.2f), b2 %.2f ms (mm %.2f, attn %.2f, gelu %.2f)' % (sys.argv[2] or 'default', j['forward_batch1']['wall_ms'], mm('forward_batch1'), at('forward_batch1'), sum(v for n,v in f('forward_batch1').items() if n.startswith('adaLN_mod')), j['forward_batch2']['wall_ms'], mm('forward_batch2'), at('forward_batch2'), f('forward_batch2').get('mlp.gelu',0)))" "$OUT/ss_flow_sw_$name.json" "$v"
done
for v in "$O" "$O --matmul-double-buffer"; do
  name=$(echo "x$v" | tr ' ' '_' | tr -d '-')
  ember bench ss-flow --synthetic --gpu-fast --json $v > "$OUT/bench_ss_flow_$name.json" || { echo "$v full run failed" >&2; continue; }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('%-40s full run %.3f s (%.1f TFLOP/s), b1 %.2f ms, b2 %.2f ms' % (sys.argv[2], j['sampling']['wall_s'], j['sampling']['tflops'], j['forward_batch1']['wall_ms'], j['forward_batch2']['wall_ms']))" "$OUT/bench_ss_flow_$name.json" "$v"
done
