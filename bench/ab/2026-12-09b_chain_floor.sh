# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-09b_chain_floor.sh`. Twentieth session.
# bench llm with the chain floor (stages x a dependent stage's cost + bytes at the read ceiling) and
# the ceilings' 0.5 s warm-up. Run 1 measured a dependent stage at 3.01 us (128 workgroups) in
# bench gpu, but bench llm's own ceilings, taken after ~40 s of GPU idle, read 1.6 TB/s, 6.0 us a
# tiny dispatch and 10.6 us a stage. Prediction: bench llm's ceilings now match bench gpu's (~3.0
# TB/s, ~2.1 us, ~3.0 us), and the chain floor at ctx 128 is ~64 x 3.0 + 51 = ~244 us, the step
# ~1.55x of it. On an H200 the H200 measurement follows.
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
sleep 30  # the GPU idles, as it did before run 1's bench llm
bench_llm ember /tmp/c_pack main --context 128 2048
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); c=j['ceilings']; print('ceilings: read %.0f GB/s, dispatch %.2f us, stage %.2f us, warm-up %.0f ms' % (c['read_gbps'], c['dispatch_gpu_us'], c['stage_gpu_us'], c['warmup_ms'])); [print('ctx %d: %d dispatches, %d stages, step %.1f us, chain floor %.1f us (%.0f tok/s), x%.2f' % (x['context'], x['dispatches_per_token'], x['stages_per_token'], x['step_gpu_us'], x['chain_floor_us'], x['chain_floor_tok_s'], x['gpu_vs_chain_floor'])) for x in j['contexts']]" "$OUT/llm_main.json"
ember bench gpu | tee "$OUT/bench_gpu.txt"
if grep -q "H200" "$OUT/devices.json"; then source bench/ab/2026-12-07b_h200.sh; fi
