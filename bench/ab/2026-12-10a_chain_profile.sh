# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-10a_chain_profile.sh`. Twenty-first session.
# Where the decode step's time above its chain floor sits: `bench llm --profile` now also times each
# kernel inside the step's one pass (timestamps between dispatches, Dawn's
# chromium-experimental-timestamp-query-inside-passes), so each kernel's share of the chain can be
# set against its own chain floor (its stages x a dependent stage + its bytes at the read ceiling).
# Predictions (H100, main's tuned candidate): the shares add up to within ~10% of the step timed
# without stamps (~381 us at ctx 128); the matvecs that norm their input and the attention hold most
# of the ~140 us excess, ~1.5-2.5 us a dispatch each; the head (41 MiB) sits near its bytes floor.
# On an H200 the H200 measurement runs first.
if grep -q "H200" "$OUT/devices.json"; then source bench/ab/2026-12-07b_h200.sh; fi
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
ember bench llm --model /tmp/c_pack --quiet --profile --repeats 3 --gen 64 --context 128,2048 --json > "$OUT/profile.json" 2> "$OUT/profile.err" || tail -3 "$OUT/profile.err"
python3 scripts/chain_profile_summary.py "$OUT/profile.json" | tee "$OUT/profile_summary.txt"
