# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_b1_splits.sh`): ss-flow split-K
# counts at batch 1 and 2 (mlp.2: K = 3072; the 768 x 768 matmuls). At batch 1 the matmuls have half
# the output tiles, so more K chunks may fill the GPU better.
for v in "" "--mlp2-splits 3" "--mlp2-splits 4" "--square-splits 3" "--square-splits 4"; do
  name=$(echo "x$v" | tr ' ' '_' | tr -d '-')
  ember bench ss-flow --synthetic --gpu-fast --json --no-sample --repeats 3 $v > "$OUT/ss_flow_splits_$name.json" || { echo "$v failed" >&2; continue; }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); f=lambda b: {e['kernel']: e['total_ms'] for e in j[b]['kernels']}; m=lambda b: sum(v for n,v in f(b).items() if n.startswith(('mlp.2','self_attn.to_out','cross_attn.to_q','cross_attn.to_out'))); print('%-18s b1 wall %.2f ms (split matmuls %.2f), b2 wall %.2f ms (split matmuls %.2f)' % (sys.argv[2] or 'default', j['forward_batch1']['wall_ms'], m('forward_batch1'), j['forward_batch2']['wall_ms'], m('forward_batch2')))" "$OUT/ss_flow_splits_$name.json" "$v"
done
