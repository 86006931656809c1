# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06_final.sh`. On this card: bench llm of
# the recorded tune (bench/results/tuned_runtime.json) with this build (the 2^23 nibble unpacking,
# no copies in a decode step); then `ember tune --allow-mlp-pair` and bench llm of its candidate
# with mlpPair off.
rm -rf /tmp/fin_pack && cp -r "$(seed_pack)" /tmp/fin_pack && cp bench/results/tuned_runtime.json /tmp/fin_pack/runtime.json
summary() {  # FILE LABEL
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], j['device']['device'] + ',', '%d dispatches,' % j['dispatches_per_token'], 'TTFT %.2f ms' % j['ttft_ms'], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us, wall step %.1f us)' % (c['context'], c['decode_tok_s'], c['step_gpu_us'], c['step_wall_us']) for c in j['contexts']))" "$1" "$2"
}
bench() {  # BINARY PACK NAME [OPTIONS...]
  local b=$1 p=$2 n=$3; shift 3
  $b bench llm --model "$p" --quiet --json "$@" > "$OUT/fin_$n.json" 2> "$OUT/fin_$n.err" && summary "$OUT/fin_$n.json" "$n:" || { echo "$n failed:"; tail -3 "$OUT/fin_$n.err"; }
}
bench ember /tmp/fin_pack head
rm -rf /tmp/fin_tuned && cp -r "$(seed_pack)" /tmp/fin_tuned
ember tune --model /tmp/fin_tuned --allow-mlp-pair --json > "$OUT/fin_tune.json" 2> "$OUT/fin_tune.err"
grep -E "^tune: (mlp|layer|norm)|budget|seconds" "$OUT/fin_tune.err" | head -8
cp /tmp/fin_tuned/runtime.json "$OUT/fin_tuned_runtime.json"
# mlpPair off whatever the tune wrote (its MLP comparison is timed in isolation; the choice is printed).
pair=$(python3 -c "import json; print(json.load(open('/tmp/fin_tuned/runtime.json'))['candidate'].get('mlpPair', False))")
echo "the tune wrote mlpPair $pair"
python3 -c "import json; j=json.load(open('/tmp/fin_tuned/runtime.json')); j['candidate']['mlpPair']=False; json.dump(j, open('/tmp/fin_tuned/runtime.json','w'), indent=1)"
cp /tmp/fin_tuned/runtime.json "$OUT/fin_tuned_nopair_runtime.json"
bench ember /tmp/fin_tuned tuned_nopair
