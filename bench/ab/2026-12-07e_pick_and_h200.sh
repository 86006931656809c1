# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-07e_pick_and_h200.sh`. Eighteenth session.
# Ran on commit ae8d7b2 (bench llm --no-head-pick); the head pick was reverted after run 5 (NOTES).
# The head-pick A/B (2026-12-07d_head_pick.sh), then, when the card is an H200, the H200 run
# (2026-12-07b_h200.sh: ceilings, a fresh default tune, its decode, a profile) with this build,
# where the default generator already uses the head's partials.
source bench/ab/2026-12-07d_head_pick.sh
if grep -q "H200" "$OUT/devices.json"; then source bench/ab/2026-12-07b_h200.sh; fi
