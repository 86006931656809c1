# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_prefetch.sh`): the qmatmul
# register prefetch of the next K step (default now) against plain loads, qmatmul geometries with
# it, and the quad attention (slot order by lane, base-2 softmax) at 64 keys per tile. Then the full
# default run. Per variant: b1 / b2 forward wall, matmuls and self attention summed over the blocks.
for v in "" "--matmul-no-prefetch" "--matmul 16 16 32" "--matmul 8 16 16" "--matmul 16 8 16" "--attn-keys 64"; do
  name=$(echo "x$v" | tr ' ' '_' | tr -d '-')
  ember bench ss-flow --synthetic --gpu-fast --json --no-sample --repeats 3 $v > "$OUT/ss_flow_pf_$name.json" || { echo "$v failed" >&2; continue; }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); f=lambda b: {e['kernel']: e['total_ms'] for e in j[b]['kernels']}; mm=lambda b: sum(v for n,v in f(b).items() if n.startswith(('mlp.0','mlp.2','self_attn.to_','cross_attn.to_'))); at=lambda b: f(b).get('self_attn.flash',0); print('%-22s b1 wall %.2f ms (matmuls %.2f, self attn %.2f), b2 wall %.2f ms (matmuls %.2f, self attn %.2f)' % (sys.argv[2] or 'default', j['forward_batch1']['wall_ms'], mm('forward_batch1'), at('forward_batch1'), j['forward_batch2']['wall_ms'], mm('forward_batch2'), at('forward_batch2')))" "$OUT/ss_flow_pf_$name.json" "$v"
done
