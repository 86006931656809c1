# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06c_stream.sh`. The streaming head
# (shared_x with several tiles a workgroup). Base: the H100 tune of run 2026-12-06b
# (bench/ab/h100_tuned_runtime_2026-12-06.json, head shared_x wg256 sg16 r2 s2, 16 rows a tile).
# bench llm of that candidate with the previous build (ember_base) and this one (tiles 1), then
# this one with the head at 4 / 16 / 64 tiles a workgroup; then a fresh `ember tune` (whose space
# now has the streaming head) and bench llm of its candidate; then the kernel tests on the GPU. (Run 2026-12-06 with its own copy of bench_llm: files s_NAME.json.)
with_head_tiles() {  # TILES DIR
  rm -rf "$2" && cp -r "$(seed_pack)" "$2"
  python3 -c "import json,sys; j=json.load(open('bench/ab/h100_tuned_runtime_2026-12-06.json')); g=j['candidate']['matvec']['head']['geometry']; g['tilesPerWorkgroup']=int(sys.argv[1]); json.dump(j, open(sys.argv[2] + '/runtime.json','w'), indent=1)" "$1" "$2"
}
with_head_tiles 1 /tmp/s_t1
bench_llm ember_base /tmp/s_t1 base
bench_llm ember /tmp/s_t1 t1
for t in 4 16 64; do with_head_tiles $t /tmp/s_t$t; bench_llm ember /tmp/s_t$t t$t; done
bench_llm ember /tmp/s_t1 t1_again
ember bench llm --model /tmp/s_t16 --quiet --profile --repeats 1 --gen 64 > "$OUT/s_profile_t16.txt" 2>&1
grep -E "^matvec_q4\[ASYM" "$OUT/s_profile_t16.txt"
rm -rf /tmp/s_tuned && cp -r "$(seed_pack)" /tmp/s_tuned
ember tune --model /tmp/s_tuned > "$OUT/s_tune.txt" 2> "$OUT/s_tune.err"
grep -E "^head|ember tune on|residual" "$OUT/s_tune.txt" "$OUT/s_tune.err" | head -5
cp /tmp/s_tuned/runtime.json "$OUT/s_tuned_runtime.json"
bench_llm ember /tmp/s_tuned tuned
timeout 150 ember_tests --gtest_filter='MatvecQ4*:*MatvecQ4Fused*:Lfm2Engine.SeedShape*' > "$OUT/s_gpu_tests.txt" 2>&1; tail -3 "$OUT/s_gpu_tests.txt"
