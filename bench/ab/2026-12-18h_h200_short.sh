# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-18h_h200_short.sh` on main (ember_base =
# main at acd0e60 in .dev/base/ember before scripts/device_pack.sh, ember = main with the
# twenty-sixth session's changes). Only on an H200
# (elsewhere it stops at once), for the session's last device minutes: both builds with the
# H200's recorded tune at 128/1024/2048, two rounds, and ember at 64 a submit / 128 in flight.
# Prediction: ember ~3,030 tok/s at ctx 128 (+3.6% over base, as on the H100 in run 18c).
on_h200 || return 0
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 1024 2048
  bench_llm ember /tmp/h_pack main_$round --context 128 1024 2048
done
bench_llm ember /tmp/h_pack main64_1 --context 128 1024 2048 --per-submit 64 --in-flight 128
