# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06_warm.sh` (seventeenth session, run 5).
# The whole-step rounds with a warm-up of at least 1.5 s: round 1's first options read 589-640 us
# in run 4 against ~380 for the same graphs later. Prediction: round 1 within ~3% across its
# options, like rounds 2 and 3, and the tune's decode within 1% of run 4's (2,710-2,718 tok/s).
tune_pack /tmp/w_tuned w_tune
grep -E "step|wall" "$OUT/w_tune.err" | head -16
bench_llm ember /tmp/w_tuned tuned
