# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06e_direct.sh`. The one-block decode
# attention's width (`flashDirectWorkgroup`, one value for every position; the tuner picks it at
# 1024 positions) at contexts 128 / 1024 / 2048: 64 / 128 / 256 / 512 threads on the H100 tune of
# run 2026-12-06b (512). Prediction: fewer threads win at ctx 128 (2 keys a quad at 256: the
# merge's barriers and shuffles dominate), by 1-2 us an attention, 6 a token.
for w in 512 64 128 256; do
  rm -rf /tmp/e_$w && cp -r "$(seed_pack)" /tmp/e_$w
  python3 -c "import json,sys; j=json.load(open('bench/ab/h100_tuned_runtime_2026-12-06.json')); j['candidate']['flashDirectWorkgroup']=int(sys.argv[1]); json.dump(j, open(sys.argv[2] + '/runtime.json','w'), indent=1)" $w /tmp/e_$w
  bench_llm ember /tmp/e_$w direct_$w
done
bench_llm ember /tmp/e_512 direct_512_again
ember bench llm --model /tmp/e_128 --quiet --profile --repeats 1 --gen 64 > "$OUT/e_profile_128.txt" 2>&1
grep -E "attention_decode" "$OUT/e_profile_128.txt" | head -3
