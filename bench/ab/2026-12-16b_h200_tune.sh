# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-16b_h200_tune.sh` on branch rmlp-prefetch, right
# after 2026-12-16 on the same H200: a fresh default `ember tune` (read-ahead from stage 1), then main,
# the read-ahead from stage 1 and em48 with that tune, two rounds. Prediction: the fresh tune within
# +-1% of the H100's tune on this card; pf1 and em48 keep their gains (+0.7%, +1.1%).
export EMBER_RMLP_PF_STAGE=1
tune_pack /tmp/t_pack tune
tail -2 "$OUT/tune.err"
for round in 1 2; do
  bench_llm ember_base /tmp/t_pack tbase_$round --context 128 1024 2048
  bench_llm ember /tmp/t_pack tpf1_$round --context 128 1024 2048
  bench_llm ember_em48 /tmp/t_pack tem48_$round --context 128 1024 2048
done
