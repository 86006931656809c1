# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_flash_direct.sh`): the 2026-12-04 tune
# (bench/results/tuned_runtime.json) as written, then with 16 attention blocks up to 192 positions, 32 beyond,
# and the widest one-block width (what the tune before it chose), then the tune before it
# (bench/ab/prev_tuned_runtime.json) whole and with only its prefill geometries moved into the new
# tune. Each: bench llm at contexts 128 and 2048, median of 3.
ab_bench() {  # NAME BASE_RUNTIME PYTHON_PATCH (j is the runtime.json, p the previous one)
  rm -rf /tmp/ab_pack && cp -r "$(seed_pack)" /tmp/ab_pack
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); p=json.load(open('bench/ab/prev_tuned_runtime.json')); exec(sys.argv[2]); json.dump(j, open('/tmp/ab_pack/runtime.json','w'), indent=1)" "$2" "$3"
  ember bench llm --model /tmp/ab_pack --quiet --context 128,2048 --json > "$OUT/ab_$1.json"
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('%-16s' % sys.argv[2], 'TTFT %.2f ms' % j['ttft_ms'], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us, %d dispatches)' % (c['context'], c['decode_tok_s'], c['step_gpu_us'], j['dispatches_per_token']) for c in j['contexts']))" "$OUT/ab_$1.json" "$1"
}
new=bench/results/tuned_runtime.json
ab_bench new "$new" "pass"
ab_bench new_16blocks "$new" "j['runtime']['flashOptima'][0]['blocks']=16; j['runtime']['flashOptima'][1]['blocks']=32; j['candidate'].pop('flashDirectWorkgroup')"
ab_bench new_again "$new" "pass"
ab_bench prev bench/ab/prev_tuned_runtime.json "pass"
ab_bench new_prev_prefill "$new" "j['candidate']['prefillMatmul']=p['candidate']['prefillMatmul']"
