# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-07f_h200_only.sh`. Eighteenth session.
# The H200 run (2026-12-07b_h200.sh) only when the lent card is an H200; on any other card it
# records the adapter and stops (every H100 figure of main this session is already in NOTES).
if grep -q "H200" "$OUT/devices.json"; then source bench/ab/2026-12-07b_h200.sh; else echo "not an H200: nothing run"; fi
