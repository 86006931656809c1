# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_ss_flow_rows16.sh`): the ss-flow kernel
# tests on the H200 (oct attention and the subgroup head norm on 32-lane subgroups), then the new
# default (oct attention, GELU in mlp.2's X loads, subgroup head norm) against the GELU pass and
# qmatmul at 16 rows a thread; then the full default run.
# After this run the GELU in the X loads measured no faster than the pass and was removed (so
# --gelu no longer parses); the pass is the default.
ember_tests --gtest_filter='*SsFlowFlashAttention*:*SsFlowQMatmul*:*SsFlowKernels*:*SsFlowModel*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|FAILED  \]" | head -20
for v in "" "--gelu pass" "--matmul-rows 16" "--matmul-rows 16 --mlp2-splits 4" "--matmul 16 8 16 --matmul-rows 16"; do
  name=$(echo "x$v" | tr ' ' '_' | tr -d '-')
  ember bench ss-flow --synthetic --gpu-fast --json --no-sample --repeats 3 $v > "$OUT/ss_flow_r16_$name.json" || { echo "$v failed" >&2; continue; }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); f=lambda b: {e['kernel']: e['total_ms'] for e in j[b]['kernels']}; g=lambda b, *p: sum(v for n,v in f(b).items() if n.startswith(p)); print('%-36s b1 %.2f ms, b2 %.2f ms (mlp.0 %.2f, mlp.2 %.2f, qkv %.2f, square %.2f, gelu %.2f, qk norm %.2f, attn %.2f)' % (sys.argv[2] or 'default', j['forward_batch1']['wall_ms'], j['forward_batch2']['wall_ms'], g('forward_batch2','mlp.0'), g('forward_batch2','mlp.2'), g('forward_batch2','self_attn.to_qkv'), g('forward_batch2','self_attn.to_out','cross_attn.to_'), g('forward_batch2','mlp.gelu'), g('forward_batch2','self_attn.qk'), g('forward_batch2','self_attn.flash')))" "$OUT/ss_flow_r16_$name.json" "$v"
done
ember bench ss-flow --synthetic --gpu-fast --json > "$OUT/bench_ss_flow.json" || echo "full run failed" >&2
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('default full run %.3f s (%.1f TFLOP/s), b1 %.2f ms, b2 %.2f ms' % (j['sampling']['wall_s'], j['sampling']['tflops'], j['forward_batch1']['wall_ms'], j['forward_batch2']['wall_ms']))" "$OUT/bench_ss_flow.json"
