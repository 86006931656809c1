# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-12_attn_prefetch.sh`, on branch prefetch-latency,
# right after 2026-12-11_prefetch.sh on the same warm machine: two more pairs of ember_attn (the
# first K/V round issued before the q loads) against ember_base, since one pair moved ctx 128 by
# +0.6% and ctx 2048 by -0.8%.
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
bench_llm ember_attn /tmp/c_pack attn_2 --context 128 2048
bench_llm ember_base /tmp/c_pack base_3 --context 128 2048
bench_llm ember_attn /tmp/c_pack attn_3 --context 128 2048
bench_llm ember_base /tmp/c_pack base_4 --context 128 2048
