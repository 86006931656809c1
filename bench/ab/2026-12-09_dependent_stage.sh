# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-09_dependent_stage.sh`. Twentieth session.
# What one dependent stage of a decode step costs with no weights and no arithmetic: `ember bench
# gpu`'s new chain of dispatches, each of whose workgroups reads the whole 1,024-float vector the
# one before wrote (dependent_stage.wgsl), at several grids, next to the tiny independent dispatch
# (~2.07 us on an H100). A decode step at ctx 128 is 70 dependent stages (42 dispatches, 14 of them
# the one-dispatch residual MLP's three stages) in ~380 us: ~5.4 us a stage.
# Prediction: a dependent stage of 128 workgroups costs 3.5-4.5 us on an H100; if it is >= 4.76 us,
# 70 stages alone exceed the 333 us of 3,000 tok/s and only fewer stages could reach it. With a
# matvec's weight bytes (read from memory, a new slice each stage): +0.5-1.5 us.
# Then the same-machine decode with the eighteenth session's H100 tune. On an H200 the H200
# measurement (issue 6) comes first.
if grep -q "H200" "$OUT/devices.json"; then source bench/ab/2026-12-07b_h200.sh; fi
stage() {  # GROUPS KIB
  ember bench gpu --mib 64 --repeats 9 --stage-groups $1 --stage-kib $2 --json > "$OUT/gpu_stage_$1_$2.json"
  python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['ceilings']; print('stage groups %5d, weights %6.0f KiB: dependent stage %.2f us, tiny dispatch %.2f us, 64 MiB read %.0f GB/s' % (c['stage_groups'], c['stage_bytes'] / 1024, c['stage_gpu_us'], c['dispatch_gpu_us'], c['read_gbps']))" "$OUT/gpu_stage_$1_$2.json"
}
for g in 128 1 32 264 1024 8192 128; do stage $g 0; done
# With a decode matvec's bytes (q4 + scales): out projection 640 KiB, conv in_proj 1,920 KiB,
# gate_up 3,200 KiB, the head 41 MiB (8,192 workgroups in the tune).
for kib in 640 1920 3200; do for g in 128 264; do stage $g $kib; done; done
stage 8192 41984
stage 1024 41984
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/s_pack
bench_llm ember /tmp/s_pack main --context 128 2048
