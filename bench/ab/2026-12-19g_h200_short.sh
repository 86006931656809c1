# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-19g_h200_short.sh` (twenty-seventh
# session's last device seconds; ember = main at 8239118, ember_base = main at 754d9c2, as in run
# 19f). Only on an H200 (elsewhere it stops at once): issue 6's figures for main with the H200's
# recorded tune at 128/1024/2048, main twice around one base run.
# Prediction: main ~3,040 tok/s at ctx 128, ctx 2048 >= 2,650, TTFT ~13.7 ms.
on_h200 || return 0
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
bench_llm ember /tmp/h_pack main_1 --context 128 1024 2048
bench_llm ember_base /tmp/h_pack base_1 --context 128 1024 2048
bench_llm ember /tmp/h_pack main_2 --context 128 1024 2048
