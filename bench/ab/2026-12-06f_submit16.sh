# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-06f_submit16.sh`. Generator steps a
# submit, 8 / 16 (16 / 32 in flight), on the H100 tune with a 256-thread one-block attention.
# Prediction: +0.5% at 16 (the host gap left at 8 is small: wall and GPU step nearly agree).
rm -rf /tmp/f_pack && cp -r "$(seed_pack)" /tmp/f_pack
python3 -c "import json; j=json.load(open('bench/ab/h100_tuned_runtime_2026-12-06.json')); j['candidate']['flashDirectWorkgroup']=256; json.dump(j, open('/tmp/f_pack/runtime.json','w'), indent=1)"
bench_llm ember /tmp/f_pack submit8 --per-submit 8 --in-flight 16
bench_llm ember /tmp/f_pack submit16 --per-submit 16 --in-flight 32
bench_llm ember /tmp/f_pack submit8_again --per-submit 8 --in-flight 16
