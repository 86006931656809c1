# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-05_llm_submit.sh`. The recorded tune
# (bench/results/tuned_runtime.json) on the seed-shape pack; bench llm at contexts 128 and 2048 with
# the generator's steps per submit 1 (the default), 2, 4 (8 in flight),
# then 1 again (drift).
rm -rf /tmp/submit_pack && cp -r "$(seed_pack)" /tmp/submit_pack && cp bench/results/tuned_runtime.json /tmp/submit_pack/runtime.json
for v in "1 4" "2 4" "4 8" "1 4"; do
  read -r per flight <<< "$v"
  ember bench llm --model /tmp/submit_pack --quiet --context 128,2048 --per-submit "$per" --in-flight "$flight" --json > "$OUT/submit_${per}_${flight}.json"
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('per submit %s, in flight %s:' % (sys.argv[2], sys.argv[3]), 'TTFT %.2f ms' % j['ttft_ms'], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us, wall step %.1f us)' % (c['context'], c['decode_tok_s'], c['step_gpu_us'], c['step_wall_us']) for c in j['contexts']))" "$OUT/submit_${per}_${flight}.json" "$per" "$flight"
done
