# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_narrow.sh`): the matmuls with 768
# output rows at 128 x 64 tiles (the C x C ones unsplit), mlp.2's split-K count with them, the GELU
# pass as vec4 with the one-exp formula, and the GELU epilogue retried with that formula; then the
# full default run.
for v in "" "--mlp2-splits 1" "--mlp2-splits 4" "--fuse-gelu" "--narrow-matmul 16 16 16 --square-splits 2"; do
  name=$(echo "x$v" | tr ' ' '_' | tr -d '-')
  ember bench ss-flow --synthetic --gpu-fast --json --no-sample --repeats 3 $v > "$OUT/ss_flow_nw_$name.json" || { echo "$v failed" >&2; continue; }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); f=lambda b: {e['kernel']: e['total_ms'] for e in j[b]['kernels']}; g=lambda b, *p: sum(v for n,v in f(b).items() if n.startswith(p)); print('%-44s b1 %.2f ms (mlp.2 %.2f), b2 %.2f ms (mlp.0 %.2f, mlp.2 %.2f, square %.2f, gelu %.2f, norms %.2f, attn %.2f)' % (sys.argv[2] or 'default', j['forward_batch1']['wall_ms'], g('forward_batch1','mlp.2'), j['forward_batch2']['wall_ms'], g('forward_batch2','mlp.0'), g('forward_batch2','mlp.2'), g('forward_batch2','self_attn.to_out','cross_attn.to_'), g('forward_batch2','mlp.gelu'), g('forward_batch2','norm'), g('forward_batch2','self_attn.flash')))" "$OUT/ss_flow_nw_$name.json" "$v"
done
ember bench ss-flow --synthetic --gpu-fast --json > "$OUT/bench_ss_flow.json" || echo "full run failed" >&2
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('default full run %.3f s (%.1f TFLOP/s), b1 %.2f ms, b2 %.2f ms' % (j['sampling']['wall_s'], j['sampling']['tflops'], j['forward_batch1']['wall_ms'], j['forward_batch2']['wall_ms']))" "$OUT/bench_ss_flow.json"
