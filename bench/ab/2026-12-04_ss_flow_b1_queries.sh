# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_b1_queries.sh`): ss-flow self
# attention at batch 1 and 2 with 128 (default) and 64 queries per workgroup. At batch 1 the 4096
# queries x 12 heads make 384 workgroups of 128, 768 of 64.
for q in 128 64 32; do
  ember bench ss-flow --synthetic --gpu-fast --json --no-sample --repeats 3 --attn-queries $q > "$OUT/ss_flow_q$q.json" || { echo "q $q failed" >&2; continue; }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); f=lambda b: {e['kernel']: e['total_ms'] for e in j[b]['kernels']}; print('queries %s: b1 wall %.2f ms (self_attn.flash %.2f), b2 wall %.2f ms (self_attn.flash %.2f)' % (sys.argv[2], j['forward_batch1']['wall_ms'], f('forward_batch1')['self_attn.flash'], j['forward_batch2']['wall_ms'], f('forward_batch2')['self_attn.flash']))" "$OUT/ss_flow_q$q.json" $q
done
