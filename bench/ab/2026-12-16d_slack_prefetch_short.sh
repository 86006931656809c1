# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-16d_slack_prefetch_short.sh` on branch
# rmlp-prefetch at 1ff7c97 (twenty-fifth session; the session's last device time, so no fresh tune):
# the residual MLP with both measured gains of runs 16/16b (read-ahead from stage 1, lane 0's wait
# slack of a quarter of the grid) against main, with this session's H200 tune
# (bench/results/h200_2026-12-07c/h200_tune_runtime.json, grid 192). Builds: ember = the branch
# (env: EMBER_RMLP_PREFETCH=0, EMBER_RMLP_PF_STAGE, EMBER_RMLP_SLACK); ember_base = main at a3fdc34.
# Predictions (H200): both +1.7% over main (~2,920 at ctx 128 against 2,873); slack 24 / 96 within
# 0.5% of 48.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2; do
  bench_llm ember_base /tmp/h_pack base_$round --context 128 2048
  bench_llm ember /tmp/h_pack both_$round --context 128 2048
  EMBER_RMLP_PREFETCH=0 bench_llm ember /tmp/h_pack slack_$round --context 128 2048
  EMBER_RMLP_SLACK=0 bench_llm ember /tmp/h_pack pf1_$round --context 128 2048
done
if [ $SECONDS -lt 150 ]; then
  EMBER_RMLP_SLACK=24 bench_llm ember /tmp/h_pack both24_1 --context 128 2048
  EMBER_RMLP_SLACK=96 bench_llm ember /tmp/h_pack both96_1 --context 128 2048
  bench_llm ember /tmp/h_pack both_3 --context 128 1024 2048
fi
