# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_oct.sh`): the oct flash attention
# (8 queries per lane octet, 32 FMAs per workgroup-memory load) against the quad default, with its
# options; then a full sampling run with the oct kernel. Per variant: b1 / b2 forward wall, matmuls
# and self attention summed over the blocks.
for v in "" "--attention oct" "--attention oct --attn-sub8" "--attention oct --attn-queries 64" "--attention oct --attn-no-prefetch" \
         "--attn-queries 256" "--attention oct --attn-queries 256"; do
  name=$(echo "x$v" | tr ' ' '_' | tr -d '-')
  ember bench ss-flow --synthetic --gpu-fast --json --no-sample --repeats 3 $v > "$OUT/ss_flow_oct_$name.json" || { echo "$v failed" >&2; continue; }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); f=lambda b: {e['kernel']: e['total_ms'] for e in j[b]['kernels']}; mm=lambda b: sum(v for n,v in f(b).items() if n.startswith(('mlp.0','mlp.2','self_attn.to_','cross_attn.to_'))); at=lambda b: f(b).get('self_attn.flash',0); print('%-40s b1 wall %.2f ms (matmuls %.2f, self attn %.2f), b2 wall %.2f ms (matmuls %.2f, self attn %.2f, cross %.2f)' % (sys.argv[2] or 'default', j['forward_batch1']['wall_ms'], mm('forward_batch1'), at('forward_batch1'), j['forward_batch2']['wall_ms'], mm('forward_batch2'), at('forward_batch2'), f('forward_batch2').get('cross_attn.flash',0)))" "$OUT/ss_flow_oct_$name.json" "$v"
done
ember bench ss-flow --synthetic --gpu-fast --json --attention oct > "$OUT/bench_ss_flow_oct.json" || echo "oct full run failed" >&2
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); [print('oct', k, {x: j[k][x] for x in j[k] if x != 'kernels'}) for k in ('forward_batch1','forward_batch2','sampling') if k in j]" "$OUT/bench_ss_flow_oct.json"
