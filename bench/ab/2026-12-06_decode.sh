# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06_decode.sh`. On the recorded tune
# (bench/results/tuned_runtime.json) of the seed-shape pack, bench llm at contexts 128 / 2048 of
# three builds: ember_base (a744c52: integer-to-float conversions), ember_unpack (23e0302: nibbles
# unpacked by OR-ing them into the bits of 2^23) and ember (this commit: also no copies in a decode
# step, and the mlpDownDelta path, off in the recorded tune); then ember with mlpDownDelta at 8 /
# 16 / 32 / 64 gate_up channels a workgroup; base and ember again (drift); per-kernel profiles; the
# q4 kernel and engine tests on this GPU; last a fresh `ember tune --allow-mlp-pair` and its bench.
rm -rf /tmp/dec_pack && cp -r "$(seed_pack)" /tmp/dec_pack && cp bench/results/tuned_runtime.json /tmp/dec_pack/runtime.json
summary() {  # FILE LABEL
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], '%d dispatches,' % j['dispatches_per_token'], 'TTFT %.2f ms' % j['ttft_ms'], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us, wall step %.1f us)' % (c['context'], c['decode_tok_s'], c['step_gpu_us'], c['step_wall_us']) for c in j['contexts']))" "$1" "$2"
}
with_delta() {  # CHANNELS: the recorded tune with mlpDownDelta set, into /tmp/dec_delta
  rm -rf /tmp/dec_delta && cp -r /tmp/dec_pack /tmp/dec_delta
  python3 -c "import json,sys; j=json.load(open('bench/results/tuned_runtime.json')); j['candidate']['mlpDownDelta']=int(sys.argv[1]); json.dump(j, open('/tmp/dec_delta/runtime.json','w'), indent=1)" "$1"
}
bench() {  # BINARY PACK NAME
  $1 bench llm --model "$2" --quiet --context 128,2048 --json > "$OUT/dec_$3.json" 2> "$OUT/dec_$3.err" && summary "$OUT/dec_$3.json" "$3:" || { echo "$3 failed:"; tail -3 "$OUT/dec_$3.err"; }
}
bench ember_base /tmp/dec_pack base
bench ember_unpack /tmp/dec_pack unpack
bench ember /tmp/dec_pack head
for n in 8 16 32 64; do with_delta "$n"; bench ember /tmp/dec_delta "delta$n"; done
bench ember_base /tmp/dec_pack base2
bench ember /tmp/dec_pack head2
with_delta 32
for b in ember_base ember; do
  $b bench llm --model /tmp/dec_pack --quiet --context 128 --profile --repeats 1 --gen 64 > "$OUT/dec_profile_$b.txt" 2>&1
done
ember bench llm --model /tmp/dec_delta --quiet --context 128 --profile --repeats 1 --gen 64 > "$OUT/dec_profile_delta32.txt" 2>&1
for f in base ember delta32; do
  g="$OUT/dec_profile_$f.txt"; [ "$f" = base ] && g="$OUT/dec_profile_ember_base.txt"
  echo "== $f decode profile =="; sed -n '/decode step at context 128/,$p' "$g" | head -12
done
timeout 120 ember_tests --gtest_filter='MatvecQ4Delta*:MatvecQ4Fused*:MatvecQ4Seed*:MlpQ4*:EmbedQ4*:Lfm2Engine*:Generate.*' > "$OUT/dec_gpu_tests.txt" 2>&1
echo "tests on this GPU (rc $?):"; grep -E "PASSED|FAILED" "$OUT/dec_gpu_tests.txt" | head -20
rm -rf /tmp/dec_tuned && cp -r "$(seed_pack)" /tmp/dec_tuned
ember tune --model /tmp/dec_tuned --allow-mlp-pair --json > "$OUT/dec_tune.json" 2> "$OUT/dec_tune.err"
tail -22 "$OUT/dec_tune.err"
cp /tmp/dec_tuned/runtime.json "$OUT/dec_tuned_runtime.json"
bench ember /tmp/dec_tuned tuned
