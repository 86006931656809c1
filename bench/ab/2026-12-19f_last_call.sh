# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-19f_last_call.sh` (twenty-seventh
# session's last device minutes; builds as in run 19e: ember_base = main at 754d9c2, ember = main
# with one-dispatch greedy sampling on every path). On any card: run 19e's `bench batch` A/B, two
# rounds. On an H200 then: both builds with the H200's recorded tune at 128/1024/2048 (issue 6).
# Predictions as in runs 19e (batch: +0.8% / +1.5% / +2.5% at 1 / 4 / 16 rows) and 19d (H200:
# main ~3,040 tok/s at ctx 128).
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2; do
  for b in ember_base ember; do bench_batch $b /tmp/h_pack ${b}_$round --rows 1,4,16; done
done
on_h200 || return 0
for round in 1 2; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 1024 2048
  bench_llm ember /tmp/h_pack main_$round --context 128 1024 2048
done
