# Sourced by scripts/device_run.sh after `llm-tuned` (which made /tmp/tuned_rec_pack with the recorded
# tune and benched it with this build): `run:bench/ab/2026-12-05_llm_dequant.sh`. The same pack with
# ember_base (the build before the 4-bit dequant without int-to-float conversions; device_pack.sh
# ships it when .dev/base/ember exists), then this build again (drift). Each: bench llm, median of 3,
# and one profiled step at context 128.
llm_line() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('%-12s' % sys.argv[2], 'TTFT %.2f ms' % j['ttft_ms'], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us)' % (c['context'], c['decode_tok_s'], c['step_gpu_us']) for c in j['contexts']))" "$@"; }
llm_line "$OUT/bench_llm_tuned_rec.json" "this build"
for bin in ember_base ember; do
  "$bin" bench llm --model /tmp/tuned_rec_pack --quiet --json > "$OUT/dequant_$bin.json"
  llm_line "$OUT/dequant_$bin.json" "$bin"
done
ember_base bench llm --model /tmp/tuned_rec_pack --quiet --profile --repeats 1 --gen 64 --context 128 > "$OUT/dequant_base_profile.txt"
grep -E "matvec|attention|embed|total" "$OUT/dequant_base_profile.txt" | tail -12
