# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-08c_residual_l64.sh`.
# Ran on 7432d9f's build (the residual-MLP keys, reverted in 0bb3976). Results: bench/results/h100_2026-12-06s; NOTES.
# One-off (nineteenth session, on 7432d9f's keys): 64 lanes a row in the residual MLP (two subgroups),
# halving the down stage's blocks a lane (3 -> 2) while keeping 8-row tiles at 512 threads.
base=bench/results/h100_2026-12-06l/h_tune_runtime.json
variant() {
  rm -rf /tmp/rt_pack && cp -r "$(seed_pack)" /tmp/rt_pack
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); j['candidate'].update(json.loads(sys.argv[2])); json.dump(j, open('/tmp/rt_pack/runtime.json','w'), indent=1)" "$base" "$2"
  bench_llm ember /tmp/rt_pack "$1" --context 128 2048
}
variant base '{}'
variant wg512_l64_n192 '{"residualMlpWorkgroupSize": 512, "residualMlpLanes": 64}'
variant wg512_l64_n128 '{"residualMlpWorkgroupSize": 512, "residualMlpLanes": 64, "residualMlpWorkgroups": 128}'
variant wg256_l64_n256 '{"residualMlpLanes": 64, "residualMlpWorkgroups": 256}'
variant wg256_l64_n192 '{"residualMlpLanes": 64}'
variant wg1024_l64_n128 '{"residualMlpWorkgroupSize": 1024, "residualMlpLanes": 64, "residualMlpWorkgroups": 128}'
variant base_again '{}'
