# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-18g_depth_batch.sh`, run 18f's bundle
# (ember = main with the eager read-back, 32 a submit / 64 in flight by default). Run 18f measured
# 64 / 128 at +5% over 32 / 64 at ctx 128 (and the same at ctx 2048, where gen is 62: the submits
# never reach 64). Depth or batch? 32 / 64, 64 / 128, 32 / 128 (depth alone), 64 / 64 (batch
# alone) at ctx 128 and 1024 (gen 256 at both), two rounds. Prediction: whichever it is, ctx 1024
# moves with ctx 128.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for round in 1 2; do
  bench_llm ember /tmp/h_pack b32d64_$round --context 128 1024
  bench_llm ember /tmp/h_pack b64d128_$round --context 128 1024 --per-submit 64 --in-flight 128
  bench_llm ember /tmp/h_pack b32d128_$round --context 128 1024 --per-submit 32 --in-flight 128
  bench_llm ember /tmp/h_pack b64d64_$round --context 128 1024 --per-submit 64 --in-flight 64
done
