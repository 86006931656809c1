# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-08b_strided_head.sh`. Nineteenth session.
# Ran on f82ef8c (the strided variant, reverted in 74f685b): run 2 the first version (rows one after
# the other), run 3 every row's loads first. Results: bench/results/h100_2026-12-06q, -r; NOTES.
# The head as the new "strided" matvec (matvec_q4_strided.wgsl): no workgroup memory, no barrier;
# each lane group holds x and its norm in registers and makes rowsPerSubgroup rows strided over the
# grid. The tuned head (shared_x, 8 rows a workgroup: 8,192 workgroups, each staging x and its norm
# behind barriers) takes ~35.5 us alone against ~22 us for a plain read of its 41 MiB at ~1,000
# workgroups (eighteenth session). Prediction: the head at ~25 us alone, -8 to -10 us a token,
# +2-2.5% at ctx 128. Candidate: the eighteenth session's fresh H100 tune; only the head changes.
base=bench/results/h100_2026-12-06l/h_tune_runtime.json
head_variant() {  # NAME VARIANT WG SG RPS SPR
  rm -rf /tmp/sh_pack && cp -r "$(seed_pack)" /tmp/sh_pack
  python3 -c "
import json,sys
j=json.load(open(sys.argv[1])); n=sys.argv[2:]
j['candidate']['matvec']['head']={'variant':n[0],'geometry':{'workgroupSize':int(n[1]),'subgroupSize':int(n[2]),'rowsPerSubgroup':int(n[3]),'subgroupsPerRow':int(n[4])}}
json.dump(j, open('/tmp/sh_pack/runtime.json','w'), indent=1)" "$base" "${@:2}"
  bench_llm ember /tmp/sh_pack "$1" --context 128 2048
}
ember_tests --gtest_filter='*Strided*:MatvecQ4*Prefetch*:MatvecQ4Fused.BadOptions*' > "$OUT/sh_tests.txt" 2>&1; tail -1 "$OUT/sh_tests.txt"
# Run 2 (first version, rows one after the other: slower, see NOTES) -> run 3: every row's loads first.
head_variant base shared_x 256 16 1 2
head_variant strided_wg256_r2 strided 256 32 2 1
head_variant strided_wg256_r4 strided 256 32 4 1
head_variant strided_wg256_r8 strided 256 32 8 1
head_variant strided_wg256_r16 strided 256 32 16 1
head_variant strided_wg128_r8 strided 128 32 8 1
head_variant strided_wg512_r4 strided 512 32 4 1
head_variant strided_wg512_r8 strided 512 32 8 1
head_variant base_again shared_x 256 16 1 2
# The head alone in the per-kernel profile: the base and strided at 256 threads, 4 and 8 rows.
for v in "base shared_x 256 16 1 2" "strided_r4 strided 256 32 4 1" "strided_r8 strided 256 32 8 1"; do
  set -- $v
  head_variant "$@" > /dev/null
  ember bench llm --model /tmp/sh_pack --quiet --profile --repeats 1 --gen 64 --context 128 > "$OUT/sh_profile_$1.txt" 2>&1
  echo "$1: $(grep 'ASYMMETRIC,NORM_INPUT,PREFETCH' "$OUT/sh_profile_$1.txt" | head -1 | tr -s ' ')"
done
# On an H200 only: the H200 measurement of main (issue 6).
if grep -q "H200" "$OUT/devices.json"; then source bench/ab/2026-12-07b_h200.sh; fi
