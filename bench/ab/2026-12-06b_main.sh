# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06b_main.sh`. On this card: bench llm of
# the recorded tune (bench/results/tuned_runtime.json) with the previous base build (ember_base,
# a744c52) and this one (the 2^23 nibble unpacking back, no copies in a decode step); then a default
# `ember tune` and bench llm of its candidate; then the kernel tests on the GPU. (Run 2026-12-06 with its own copy of bench_llm, which named the files m_NAME.json.)
rm -rf /tmp/m_pack && cp -r "$(seed_pack)" /tmp/m_pack && cp bench/results/tuned_runtime.json /tmp/m_pack/runtime.json
bench_llm ember_base /tmp/m_pack base
bench_llm ember /tmp/m_pack head
rm -rf /tmp/m_tuned && cp -r "$(seed_pack)" /tmp/m_tuned
/usr/bin/time -f "tune wall %e s" ember tune --model /tmp/m_tuned > "$OUT/m_tune.txt" 2> "$OUT/m_tune.err"
tail -1 "$OUT/m_tune.err"; grep -E "budget|seconds|wrote" "$OUT/m_tune.err" | tail -3
cp /tmp/m_tuned/runtime.json "$OUT/m_tuned_runtime.json"
bench_llm ember /tmp/m_tuned tuned
bench_llm ember_base /tmp/m_pack base_again
ember bench llm --model /tmp/m_pack --quiet --profile --repeats 1 --gen 64 > "$OUT/m_profile.txt" 2>&1
timeout 120 ember_tests --gtest_filter='MatvecQ4*:ResidualMlpQ4*:Lfm2Engine.SeedShapeResidualMlpKeepsTheLogits' > "$OUT/m_gpu_tests.txt" 2>&1; tail -3 "$OUT/m_gpu_tests.txt"
