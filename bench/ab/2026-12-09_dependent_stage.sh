# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-09_dependent_stage.sh`. Twentieth session.
# What one dependent stage of a decode step costs with no weights and no arithmetic: `ember bench
# gpu`'s new chain of dispatches, each of whose workgroups reads the whole 1,024-float vector the
# one before wrote (dependent_stage.wgsl), at several grids, next to the tiny independent dispatch
# (~2.07 us on an H100). A decode step at ctx 128 is 70 dependent stages (42 dispatches, 14 of them
# the one-dispatch residual MLP's three stages) in ~380 us: ~5.4 us a stage.
# Prediction: a dependent stage of 128 workgroups costs 3.5-4.5 us on an H100; if it is >= 4.76 us,
# 70 stages alone exceed the 333 us of 3,000 tok/s and only fewer stages could reach it.
# Then the same-machine decode with the eighteenth session's H100 tune, and on an H200 the H200
# measurement (issue 6).
for g in 128 1 32 264 1024 8192 128; do
  ember bench gpu --mib 64 --repeats 9 --stage-groups $g --json > "$OUT/gpu_stage_$g.json"
  python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['ceilings']; print('stage groups %5d: dependent stage %.2f us, tiny dispatch %.2f us, 64 MiB read %.0f GB/s' % (c['stage_groups'], c['stage_gpu_us'], c['dispatch_gpu_us'], c['read_gbps']))" "$OUT/gpu_stage_$g.json"
done
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/s_pack
bench_llm ember /tmp/s_pack main --context 128 2048
if grep -q "H200" "$OUT/devices.json"; then source bench/ab/2026-12-07b_h200.sh; fi
