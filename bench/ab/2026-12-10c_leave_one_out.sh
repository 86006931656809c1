# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-10c_leave_one_out.sh`. Twenty-first session.
# 10a's timestamps inside the pass drained the GPU at every stamp (the kernels' shares summed to
# 688 us for a 373 us step), so they cannot say what a kernel adds to the chain. Now each kernel's
# share is the step in one pass less the same step without that kernel's dispatches.
# Predictions (H100, main's tuned candidate, ctx 128): the shares sum to within ~15% of the step;
# the residual MLP (14 dispatches, 3 stages each) and the attention hold most of the excess over
# their chain floors; the head sits near its bytes floor.
if grep -q "H200" "$OUT/devices.json"; then source bench/ab/2026-12-07b_h200.sh; fi
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
ember bench llm --model /tmp/c_pack --quiet --profile --repeats 3 --gen 64 --context 128,2048 --json > "$OUT/loo.json" 2> "$OUT/loo.err" || tail -3 "$OUT/loo.err"
python3 scripts/chain_profile_summary.py "$OUT/loo.json" | tee "$OUT/loo_summary.txt"
