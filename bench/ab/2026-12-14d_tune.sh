# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-14d_tune.sh` (after 2026-12-14c on the same
# machine; same builds: ember = main with the early residual reads and the attention merge). A fresh
# default `ember tune` with the new kernels, then its pack against the eighteenth session's tune.
# Prediction: the tune keeps 192-256 workgroups and decodes within 1% of the recorded tune.
tune_pack /tmp/t_pack tune
tail -2 "$OUT/tune.err"
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
python3 -c "import json; j=json.load(open('/tmp/t_pack/runtime.json')); print('residualMlpWorkgroups', j['candidate'].get('residualMlpWorkgroups'), 'flashDirectWorkgroup', j['candidate'].get('flashDirectWorkgroup'))"
for round in 1 2; do
  bench_llm ember /tmp/c_pack recorded_$round --context 128 1024 2048
  bench_llm ember /tmp/t_pack fresh_$round --context 128 1024 2048
done
