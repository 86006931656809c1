# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-22a_main_contexts.sh` (thirtieth session;
# ember = main as device_pack.sh builds it). Any card: main's three contexts with the H200's
# recorded tune, twice, for the README's decode-vs-context plot.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
bench_llm ember /tmp/h_pack main_1 --context 128 1024 2048
bench_llm ember /tmp/h_pack main_2 --context 128 1024 2048
