# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-10b_same_without_stamps.sh`. Twenty-first
# session, on the machine that ran 2026-12-10a (still warm). 10a's bench llm --profile decoded 2,811
# tok/s at ctx 128 (gen 64), above any earlier H100 figure (2,688-2,725 at gen 256). The same run
# without --profile (no allow_unsafe_apis device) at gen 64, then at the default gen 256: prediction,
# the gain is the shorter run (smaller mean context), ~2,750 at gen 256.
with_runtime bench/results/h100_2026-12-06l/h_tune_runtime.json /tmp/c_pack
bench_llm ember /tmp/c_pack gen64 --repeats 3 --gen 64 --context 128 2048
bench_llm ember /tmp/c_pack gen256 --context 128 2048
python3 -c "import json,sys; [print(f, 'ceilings read %.0f GB/s' % json.load(open(f))['ceilings']['read_gbps']) for f in sys.argv[1:]]" "$OUT/llm_gen64.json" "$OUT/llm_gen256.json"
