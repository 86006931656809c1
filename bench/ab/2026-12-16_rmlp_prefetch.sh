# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-16_rmlp_prefetch.sh` on branch rmlp-prefetch
# (twenty-fifth session). Does the one-dispatch residual MLP gain from reading the next dispatch's
# weights (the next layer's conv in_proj / qkv; after the last layer the head's first MiB) into L2
# while it waits on its hand-overs? The kernel now binds its matrices as one range of the model's
# one weights buffer (Dawn's 10 storage buffers left no binding for the read-ahead).
# Builds: ember = the branch (env: EMBER_RMLP_PREFETCH=0 turns the read-ahead off,
# EMBER_RMLP_PF_STAGE 0-2 picks the stage it starts in, EMBER_HEAD_PF_MIB the head's share);
# ember_base = main at a3fdc34; ember_pre24 = main before the twenty-fourth session's early reads and
# attention merge; ember_em48 = main with lane 0's wait slack of 48 (branch wait-slack's kernel).
# Predictions (H100, main's tune, gen 256): base +2% over pre24 (~2,745 at ctx 128); read-ahead off
# = base (the one weights buffer changes no kernel's reads); from stage 2 -0.5 us a layer (+2%); the
# head's first 8 MiB a further -3 us; em48 +0.7% over base.
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
for round in 1 2; do
  bench_llm ember_base /tmp/c_pack base_$round --context 128 2048
  EMBER_RMLP_PREFETCH=0 bench_llm ember /tmp/c_pack off_$round --context 128 2048
  EMBER_RMLP_PF_STAGE=2 bench_llm ember /tmp/c_pack pf2_$round --context 128 2048
  EMBER_RMLP_PF_STAGE=0 bench_llm ember /tmp/c_pack pf0_$round --context 128 2048
  EMBER_RMLP_PF_STAGE=1 bench_llm ember /tmp/c_pack pf1_$round --context 128 2048
  EMBER_RMLP_PF_STAGE=2 EMBER_HEAD_PF_MIB=8 bench_llm ember /tmp/c_pack pf2h8_$round --context 128 2048
  EMBER_RMLP_PF_STAGE=2 EMBER_HEAD_PF_MIB=20 bench_llm ember /tmp/c_pack pf2h20_$round --context 128 2048
  bench_llm ember_pre24 /tmp/c_pack pre24_$round --context 128 2048
  bench_llm ember_em48 /tmp/c_pack em48_$round --context 128 2048
done
if [ $SECONDS -lt 330 ]; then
  bench_llm ember_base /tmp/c_pack base_3 --context 128 2048
  EMBER_RMLP_PF_STAGE=2 bench_llm ember /tmp/c_pack pf2_3 --context 128 2048
  EMBER_RMLP_PF_STAGE=2 EMBER_HEAD_PF_MIB=8 bench_llm ember /tmp/c_pack pf2h8_3 --context 128 2048
fi
ember_tests --gtest_filter='ResidualMlpQ4*:Lfm2Engine.ResidualMlp*' > "$OUT/kernel_tests.txt" 2>&1; tail -1 "$OUT/kernel_tests.txt"
