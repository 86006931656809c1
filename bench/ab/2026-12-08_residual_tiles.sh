# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-08_residual_tiles.sh`. Nineteenth session.
# Ran on 7432d9f (the keys, reverted in 0bb3976). Results: bench/results/h100_2026-12-06p; NOTES.
# The one-dispatch residual MLP (residual_mlp_q4.wgsl) with fewer, wider tiles and with the next
# tile's weight loads issued early. At 256 threads and 32 lanes a row a tile is 8 rows: stage 1
# (gate_up, ffn 2560 rows) is 320 tiles, so at the tuned grid of 192 workgroups 128 of them run two
# tiles one after the other, each waiting for its weights from memory. Hypothesis: that second
# memory wait is ~1-1.5 us of each layer's ~18 us. Prediction: 16 lanes a row (16-row tiles, 160
# in stage 1, one round at grids >= 160) or residualMlpNextTile take 10-20 us off a ~367 us token,
# +3-5% at ctx 128. Candidate: the eighteenth session's fresh H100 tune (192 workgroups).
base=bench/results/h100_2026-12-06l/h_tune_runtime.json
variant() {  # NAME JSON-OF-EXTRA-KEYS
  rm -rf /tmp/rt_pack && cp -r "$(seed_pack)" /tmp/rt_pack
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); j['candidate'].update(json.loads(sys.argv[2])); json.dump(j, open('/tmp/rt_pack/runtime.json','w'), indent=1)" "$base" "$2"
  bench_llm ember /tmp/rt_pack "$1" --context 128 2048
}
ember_tests --gtest_filter='ResidualMlpQ4.*:Lfm2Engine.*Residual*' > "$OUT/rt_tests.txt" 2>&1; tail -1 "$OUT/rt_tests.txt"
variant base '{}'
variant next '{"residualMlpNextTile": true}'
variant l16_n160 '{"residualMlpLanes": 16, "residualMlpWorkgroups": 160}'
variant l16_n192 '{"residualMlpLanes": 16}'
variant l16_n256 '{"residualMlpLanes": 16, "residualMlpWorkgroups": 256}'
variant l16_n128_next '{"residualMlpLanes": 16, "residualMlpWorkgroups": 128, "residualMlpNextTile": true}'
variant wg512_n160 '{"residualMlpWorkgroupSize": 512, "residualMlpWorkgroups": 160}'
variant wg512_l16_n80 '{"residualMlpWorkgroupSize": 512, "residualMlpLanes": 16, "residualMlpWorkgroups": 80}'
variant n320 '{"residualMlpWorkgroups": 320}'
variant n132_next '{"residualMlpWorkgroups": 132, "residualMlpNextTile": true}'
variant base_again '{}'
