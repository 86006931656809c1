# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-05_residual_mlp.sh`. The recorded tune
# (bench/results/tuned_runtime.json) on the seed-shape pack, with each layer's out projection + MLP
# as one dispatch (candidate residualMlpWorkgroups N, residualMlpTilesHeld T; N 0 = off) at several
# grids; bench llm at contexts 128 and 2048 (medians of 3), then a profile and a greedy-logits
# comparison of the fused path against the separate dispatches.
rm -rf /tmp/rm_pack && cp -r "$(seed_pack)" /tmp/rm_pack
rm_candidate() {  # N T
  python3 -c "import json,sys; j=json.load(open('bench/results/tuned_runtime.json')); c=j['candidate']; c['residualMlpWorkgroups']=int(sys.argv[1]); c['residualMlpTilesHeld']=int(sys.argv[2]); json.dump(j, open('/tmp/rm_pack/runtime.json','w'), indent=1)" "$1" "$2"
}
for v in "0 1" "132 1" "264 1" "320 1" "128 1" "396 1" "132 8" "0 1"; do
  read -r n held <<< "$v"
  rm_candidate "$n" "$held"
  f="$OUT/rm_${n}_${held}.json"
  ember bench llm --model /tmp/rm_pack --quiet --context 128,2048 --json > "$f" 2> "$OUT/rm_${n}_${held}.err" || { echo "N $n T $held failed: $(tail -2 "$OUT/rm_${n}_${held}.err")"; continue; }
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('N %s T %s:' % (sys.argv[2], sys.argv[3]), 'on %d,' % j.get('residual_mlp_workgroups', -1), '%d dispatches,' % j['dispatches_per_token'], 'TTFT %.2f ms' % j['ttft_ms'], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us, wall %.1f us)' % (c['context'], c['decode_tok_s'], c['step_gpu_us'], c['step_wall_us']) for c in j['contexts']))" "$f" "$n" "$held"
done
rm_candidate 132 1
ember bench llm --model /tmp/rm_pack --quiet --profile --repeats 1 --gen 64 --context 128 > "$OUT/rm_profile_132.txt" 2>&1; grep -A14 "decode step at context 128" "$OUT/rm_profile_132.txt"
# Greedy decode logits, fused vs separate: 64 steps each.
for n in 0 132; do
  rm_candidate "$n" 1
  ember generate --model /tmp/rm_pack --quiet --temperature 0 -n 64 -p "The residual stream" --dump-logits "$OUT/rm_logits_$n.npy" --json > "$OUT/rm_gen_$n.json" 2>&1 || echo "generate N $n failed"
done
python3 - "$OUT/rm_logits_0.npy" "$OUT/rm_logits_132.npy" "$OUT/rm_gen_0.json" "$OUT/rm_gen_132.json" <<'PY'
import array, json, math, sys
def npy(p):
    b = open(p, 'rb').read(); n = int.from_bytes(b[8:10], 'little'); a = array.array('f'); a.frombytes(b[10 + n:]); return a
a, b = npy(sys.argv[1]), npy(sys.argv[2])
ids = [json.load(open(p)).get('ids') for p in sys.argv[3:5]]
num = sum((x - y) ** 2 for x, y in zip(a, b)); den = sum(x * x for x in a)
print('greedy logits fused vs separate: %d vs %d floats, rel L2 %.3g, same ids: %s' % (len(a), len(b), math.sqrt(num / den) if den else -1, ids[0] == ids[1]))
PY
rm -f "$OUT"/rm_logits_*.npy  # 16 MiB each: too large to bring back
ember_tests --gtest_filter='*ResidualMlp*' 2>&1 | tee "$OUT/rm_gpu_tests.txt" | grep -E "^\[  (PASSED|FAILED)|FAILED  \]|OK \]" | head -20
