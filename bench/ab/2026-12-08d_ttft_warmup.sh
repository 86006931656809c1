# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-08d_ttft_warmup.sh`. Nineteenth session.
# bench llm's first-token warm-up now runs for 0.5 s instead of once. On freshly started H100s the
# first bench of a call read TTFT 25.8 and 30.2 ms against 13.8-14.3 ms later in the same call
# (runs 3 and 4 of this session; NOTES). Ran on 69fb647. Prediction: the first bench on this fresh machine reads ~14 ms,
# within 5% of the second. Candidate: the eighteenth session's H100 tune. On an H200, the H200
# measurement follows (issue 6).
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/w_pack
bench_llm ember /tmp/w_pack first
bench_llm ember /tmp/w_pack second
python3 -c "import json; print('ttft_warmup_runs', json.load(open('$OUT/llm_first.json'))['ttft_warmup_runs'])"
if grep -q "H200" "$OUT/devices.json"; then source bench/ab/2026-12-07b_h200.sh; fi
