# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-14b_handover_more.sh` (after
# 2026-12-14_handover.sh on the same machine; same builds): a third round, and the word polling
# with the early reads at grids of 132 and 256 workgroups (main's tune: 192). Prediction: the
# words' gain largest at 132, smallest (or a loss) at 256. No new bench run starts after 460 s.
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
for n in 132 256; do
  with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack_$n
  python3 -c "import json,sys; p=sys.argv[1]; j=json.load(open(p)); j['candidate']['residualMlpWorkgroups']=int(sys.argv[2]); json.dump(j, open(p,'w'), indent=1)" /tmp/c_pack_$n/runtime.json $n
done
for run in "base c_pack base_3" "wordsearly c_pack wordsearly_3" "early c_pack early_3" "ember c_pack merge_3" \
           "base c_pack_132 base_g132" "wordsearly c_pack_132 wordsearly_g132" "base c_pack_256 base_g256" "wordsearly c_pack_256 wordsearly_g256"; do
  set -- $run
  if [ $SECONDS -gt 460 ]; then echo "skipped $3 (time)"; continue; fi
  bin=ember_$1; [ $1 = ember ] && bin=ember
  bench_llm $bin /tmp/$2 $3 --context 128 2048
done
