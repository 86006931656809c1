# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-07d_head_pick.sh`. Eighteenth session.
# Ran on commit ae8d7b2 (bench llm --no-head-pick); the head pick was reverted after run 5 (NOTES).
# Run 1 (a first design, reverted): the head's last workgroup merged every workgroup's best itself
# and wrote the id (a counter and tagged words), no sampler dispatch at all: 2,682-2,695 ->
# 2,535-2,537 tok/s at ctx 128, -5.7%.
# Run 2 (this build): each head workgroup writes its best row as the sampler's greedy partial
# (matvec_q4.wgsl ARGMAX: one barrier and a scan of 8 candidates, two plain stores), and the
# sampler's one-workgroup pick reads those 8,192 partials; the partials dispatch (256 workgroups
# reading the logits again) is gone. Candidate: this session's fresh H100 tune
# (bench/results/h100_2026-12-06l/h_tune_runtime.json). Prediction: one dependent stage fewer a token,
# -3 to -5 us: ~2,690 -> ~2,720 tok/s at ctx 128 (+1%); GPU step (decode graph alone) unchanged.
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/hp_pack
ember_tests --gtest_filter='MatvecQ4Argmax*:Generate.*:MatvecQ4Fused*' > "$OUT/hp_tests.txt" 2>&1; tail -3 "$OUT/hp_tests.txt"
for round in 1 2; do
  bench_llm ember /tmp/hp_pack sampler_pick_$round --no-head-pick
  bench_llm ember /tmp/hp_pack head_pick_$round
done
bench_llm ember /tmp/hp_pack sampler_pick_submit16 --no-head-pick --per-submit 16 --in-flight 32
bench_llm ember /tmp/hp_pack head_pick_submit16 --per-submit 16 --in-flight 32
