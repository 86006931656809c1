# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-07c_short_reads.sh`. Eighteenth session.
# Question: is the head matvec's plateau (43 MB in ~35 us alone, ~1.2 TB/s, whatever the geometry)
# a property of short reads on this card? Run 1 (16,384 workgroups): 41 MiB read in 29.8 us, and
# t ~ 14 us + bytes / 3.07 TB/s from 16 MiB to 1 GiB. Run 2: the same reads over fewer workgroups.
# Prediction: a fixed cost that falls with the grid (workgroup launches), 41 MiB in ~18 us at
# ~1-4k workgroups; if not, the head is at the card's short-read ceiling.
for mib in 16 41; do
  for g in 264 528 1056 2112 4224 8448 16384 32768; do
    printf "%5s MiB %6s groups: " $mib $g; ember bench gpu --mib $mib --groups $g 2>&1 | grep "read bandwidth"
  done
done | tee "$OUT/short_reads.txt"
