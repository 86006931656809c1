# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-07b_h200.sh`. Written in the seventeenth
# session (2026-12-06, no H200 lent) for the next session that gets an H200; ~5 minutes:
# 1. the card's ceilings (read bandwidth, per-dispatch GPU time);
# 2. a fresh default `ember tune` of main (whole-step rounds) and its decode, as issue 6 measures it,
#    then with 16 steps a submit (32 in flight). Prediction: ~2,800 tok/s at ctx 128 (the H100's
#    2,710-2,718 plus the ~3% an H200 gave the same build on 2026-12-04), i.e. issue 6's 3,000 still
#    open; ctx 2048 ~2,550; TTFT ~13.5 ms; tune wall <= 120 s;
# 3. the per-kernel profile of that candidate at ctx 128 (where the next microseconds are).
ember bench gpu > "$OUT/h_bench_gpu.txt" 2>&1; tail -4 "$OUT/h_bench_gpu.txt"
tune_pack /tmp/h_tuned h_tune
grep -E "step|wall" "$OUT/h_tune.err" | head -16
bench_llm ember /tmp/h_tuned tuned
bench_llm ember /tmp/h_tuned tuned_submit16 --per-submit 16 --in-flight 32
ember bench llm --model /tmp/h_tuned --quiet --profile --repeats 1 --gen 64 --context 128 > "$OUT/h_profile.txt" 2>&1; grep -A10 "context 128" "$OUT/h_profile.txt" | head -12
bench_llm ember /tmp/h_tuned tuned_again
