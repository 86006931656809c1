# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-05_final.sh`. `ember tune --allow-mlp-pair`
# on the seed-shape pack (the residual MLP search timing both paths as spans), then bench llm of that
# tune with the one-dispatch residual MLP off, then at the grid the tune chose (or 132 when it chose
# off), at contexts 128 / 1024 / 2048 with the generator's defaults (medians of 3).
rm -rf /tmp/final_tuned && cp -r "$(seed_pack)" /tmp/final_tuned
ember tune --model /tmp/final_tuned --allow-mlp-pair --json > "$OUT/final_tune.json" 2> "$OUT/final_tune.err"
grep -E "^tune: (layer|mlp|norm)" "$OUT/final_tune.err"
cp /tmp/final_tuned/runtime.json "$OUT/final_tuned_runtime.json"
rm -rf /tmp/final_pack && cp -r /tmp/final_tuned /tmp/final_pack
chosen=$(python3 -c "import json; print(json.load(open('/tmp/final_tuned/runtime.json'))['candidate'].get('residualMlpWorkgroups', 0))")
echo "tune chose residualMlpWorkgroups $chosen"
[ "$chosen" = 0 ] && chosen=132
for n in 0 "$chosen"; do
  python3 -c "import json,sys; j=json.load(open('/tmp/final_tuned/runtime.json')); j['candidate']['residualMlpWorkgroups']=int(sys.argv[1]); json.dump(j, open('/tmp/final_pack/runtime.json','w'), indent=1)" "$n"
  ember bench llm --model /tmp/final_pack --quiet --json > "$OUT/final_rm_$n.json" || { echo "N $n failed"; continue; }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('residualMlpWorkgroups %s:' % sys.argv[2], '%d dispatches,' % j['dispatches_per_token'], 'per submit %d, in flight %d,' % (j['steps_per_submit'], j['in_flight']), 'TTFT %.2f ms' % j['ttft_ms'], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us)' % (c['context'], c['decode_tok_s'], c['step_gpu_us']) for c in j['contexts']))" "$OUT/final_rm_$n.json" "$n"
done
