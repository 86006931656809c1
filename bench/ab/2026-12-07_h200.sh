# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-07_h200.sh`. Written on 2026-12-06 (a
# session without device time), run in the seventeenth; in priority order, ~9 minutes on an H200:
# 1. main's decode with the H100 tune and a fresh default tune on this card (main has not been
#    measured on an H200; the last H200 figure, 2,395 tok/s at ctx 128, is an older build), and a
#    per-kernel profile of the fresh tune (where the next microseconds are);
# 2. `ember tune --allow-mlp-pair`, which now decides mlpPair by whole decode steps (prediction:
#    mlpPair off, its fused step ~1.5x the unfused one, as the 1,717 tok/s candidate showed);
# 3. the seed's candidate with its f16 down products (now honoured) and without them
#    (prediction: within 1%: the fused MLP is latency-bound, not arithmetic-bound).
with_runtime bench/ab/h100_tuned_runtime_2026-12-06.json /tmp/n_h100 && bench_llm ember /tmp/n_h100 h100_tune
tune_pack /tmp/n_tuned n_tune
grep -E "ember tune on|residual|wall" "$OUT/n_tune.err" | head -4
bench_llm ember /tmp/n_tuned tuned
ember bench llm --model /tmp/n_tuned --quiet --profile --repeats 1 --gen 64 > "$OUT/n_profile_tuned.txt" 2>&1; tail -40 "$OUT/n_profile_tuned.txt"
ember bench gpu > "$OUT/n_bench_gpu.txt" 2>&1; tail -12 "$OUT/n_bench_gpu.txt"
tune_pack /tmp/n_pair n_pair --allow-mlp-pair
grep -E "decode step|mlpPair|wall" "$OUT/n_pair.err" | head -4
bench_llm ember /tmp/n_pair allow_pair
with_runtime tests/fixtures/seed000_runtime.json /tmp/n_seed && bench_llm ember /tmp/n_seed seed_f16
python3 -c "import json; j=json.load(open('/tmp/n_seed/runtime.json')); j['candidate']['mlpHalfProduct']='none'; json.dump(j, open('/tmp/n_seed/runtime.json','w'), indent=1)"
bench_llm ember /tmp/n_seed seed_f32
bench_llm ember /tmp/n_tuned tuned_again
timeout 60 ember_tests --gtest_filter='MlpQ4*:Candidates/*mlp_pair*:Lfm2Engine.SeedShape*' > "$OUT/n_gpu_tests.txt" 2>&1; tail -3 "$OUT/n_gpu_tests.txt"
