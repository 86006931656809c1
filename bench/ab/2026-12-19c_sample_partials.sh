# Sourced by scripts/device_run.sh: `run:bench/ab/2026-12-19c_sample_partials.sh` (twenty-seventh
# session; ember = main at 754d9c2, where the pack's samplePartials sizes the sampler; ember_base =
# main at 284557a). On any card: the one-dispatch greedy sampler with 64 / 128 / 256 / 512 / 1024
# workgroups (samplePartials in the H200's recorded tune), ctx 128 and 1024, two rounds
# interleaved. On an H200 also a fresh tune benched with both builds (issue 6's figures).
# Prediction: 128 fastest by ~0.3% (half the arrivals on the counter and half the words for the
# last workgroup, two logits a lane); 512 and 1024 slower (more arrivals and words); 64 about 256.
with_runtime bench/results/h200_2026-12-07c/h200_tune_runtime.json /tmp/h_pack
for p in 64 128 256 512 1024; do
  rm -rf /tmp/p_$p && cp -r /tmp/h_pack /tmp/p_$p
  python3 -c "import json,sys; f='/tmp/p_$p/runtime.json'; j=json.load(open(f)); j['runtime']['samplePartials']=$p; json.dump(j,open(f,'w'),indent=2)"
done
for round in 1 2; do
  for p in 256 64 128 512 1024; do bench_llm ember /tmp/p_$p p${p}_$round --context 128 1024; done
done
on_h200 || return 0
tune_pack /tmp/t_pack tune
tail -1 "$OUT/tune.err"
for round in 1 2; do
  bench_llm ember_base /tmp/t_pack tbase_$round --context 128 1024 2048
  bench_llm ember /tmp/t_pack tmain_$round --context 128 1024 2048
done
