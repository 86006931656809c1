# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-22b_h200_main_tune.sh` (thirtieth session;
# ember = main, as `bash scripts/device_pack.sh` on main builds it; replaces 2026-12-21b, which
# never met an H200). Only on an H200 (elsewhere it stops at once):
# 1. issue 6's three contexts for main with the H200's recorded tune, twice.
#    Prediction: ~3,070-3,100 tok/s at ctx 128 (the twenty-fifth session's 2,906-2,909, then +3.6%,
#    +0.8% and +1.2% measured on H100s), ctx 2048 >= 2,650.
# 2. a fresh default `ember tune` of current main (criterion 3: within its 120 s budget), its pack
#    benched, and the seed's candidate unchanged at ctx 128 for the comparison.
on_h200 || return 0
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
bench_llm ember /tmp/h_pack main_1 --context 128 1024 2048
bench_llm ember /tmp/h_pack main_2 --context 128 1024 2048
tune_pack /tmp/t_pack tune
tail -2 "$OUT/tune.err"
bench_llm ember /tmp/t_pack tuned --context 128 1024 2048
bench_llm ember "$(seed_pack)" seed --context 128 --gen 64
