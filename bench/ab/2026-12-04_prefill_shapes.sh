# Sourced by scripts/device_run.sh (`run:bench/ab/2026-12-04_prefill_shapes.sh`, after
# 2026-12-04_flash_direct.sh defined ab_bench): why the 2026-12-04 tune's time to first token is
# 1.4 ms longer than the tune before it. The new tune with one shape's prefill geometry taken from
# the previous tune at a time, with every split-K removed, then the previous tune and the seed's
# candidate under the new one-block default width (512 threads).
new=bench/results/tuned_runtime.json
for k in conv_out_proj mlp_down attn_qkv attn_o_proj; do
  ab_bench "prev_$k" "$new" "j['candidate']['prefillMatmul']['$k']=p['candidate']['prefillMatmul']['$k']"
done
ab_bench new_unsplit "$new" "[g.update(kSplits=1) for g in j['candidate']['prefillMatmul'].values()]"
ab_bench new_prev_prefill "$new" "j['candidate']['prefillMatmul']=p['candidate']['prefillMatmul']"
ab_bench prev_default_direct bench/ab/prev_tuned_runtime.json "pass"
ab_bench seed_default_direct tests/fixtures/seed000_runtime.json "pass"
