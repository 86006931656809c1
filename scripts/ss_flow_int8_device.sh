# ss-flow on packed int8 dot products and the per-device stage candidate, at the seed-004 shape
# with random weights (4096 tokens, 768 wide, 12 blocks, 77 context tokens). Sourced by
# scripts/device_run.sh: `scripts/device_run.sh run:scripts/ss_flow_int8_device.sh`.
#  1. the compute ceilings and f32 vs int8 forwards at batch 1 and 2 (defaults, no candidate),
#     and the default run plus a batch of 4 samples on each path;
#  2. `ember tune --stage` (default budget), then the default 25-step run (cfg 7.5 in [0.5, 1],
#     rescale 3) under the tuned candidate, with its per-kernel table;
#  3. the final latent of `ember ss-flow` (seed 0) on the int8 path vs the f32 path: rel L2.
# Results in $OUT: ssf_*.json / .txt, tune.txt / tune.json, the stage's candidate file, latents.
# For a dry run of the plumbing on a CPU adapter: SSF_SYNTH="--tiny" SSF_COND=96
# SSF_BENCH="--steps 2 --repeats 1" SSF_TUNE="--max-choices 3" (all empty / 768 by default).
ssf_dir=/tmp/ssf_int8
synth_args=${SSF_SYNTH:-}
cond_ch=${SSF_COND:-768}
bench_args=${SSF_BENCH:---repeats 5}
tune_args=${SSF_TUNE:-}
ssf_steps=${SSF_STEPS:-}  # e.g. "--steps 3" for a dry run; the default run otherwise
rm -rf "$ssf_dir" && mkdir -p "$ssf_dir"
ember synth trellis-ss-flow $synth_args --seed 1 --out "$ssf_dir/ckpt.safetensors" >/dev/null
ember pack trellis --quiet --stage ss-flow --from "$ssf_dir/ckpt.safetensors" --out "$ssf_dir/stage" >/dev/null
stage="$ssf_dir/stage"
ssf_line() {  # FILE LABEL: one line of forwards and the default run
  python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
f = lambda b: j.get("forward_batch%d" % b, {})
s = j.get("sampling", {}); sb = j.get("sampling_batch", {})
print("%-14s %s | batch1 %.2f ms, batch2 %.2f ms (kernels %.2f ms) | default run %.3f s (step %.2f / %.2f ms) | batch of %s: %.3f s/latent | ceilings FMA %.4g TFLOP/s, dot4 %.4g TOPS"
      % (sys.argv[2], j["device"]["device"], f(1).get("wall_ms", 0), f(2).get("wall_ms", 0), f(2).get("gpu_kernels_ms", 0),
         s.get("wall_s", 0), s.get("step_ms_batch1", 0), s.get("step_ms_batch2", 0), sb.get("samples", 0), sb.get("wall_s_per_sample", 0),
         j["ceilings"]["fma_tflops"], j["ceilings"]["dot4_tops"]))
PY
}
echo "== ss-flow f32 vs int8 (defaults, no candidate) =="
for path in f32 int8; do
  flag=""; [ "$path" = int8 ] && flag="--int8"
  ember bench ss-flow --stage "$stage" --gpu-fast --no-candidate $flag $bench_args --batch-samples 4 --json > "$OUT/ssf_$path.json" 2> "$OUT/ssf_$path.err" \
    && ssf_line "$OUT/ssf_$path.json" "$path" || { echo "bench $path failed"; tail -n 3 "$OUT/ssf_$path.err"; }
done
echo "== ember tune --stage (default budget) =="
/usr/bin/time -f "tune wall %e s" ember tune --stage "$stage" --gpu-fast $tune_args --json > "$OUT/tune.json" 2> "$OUT/tune.err"
tail -1 "$OUT/tune.err"
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('checked %d, rejected %d, failed %d, %.1f s; score %.2f ms defaults -> %.2f ms tuned; int8 %s; latent rel L2 %.3e%s' % (j['checked'], j['rejected'], j['failed'], j['seconds'], j['default_ms'], j['best_ms'], j['best']['int8'], j['latent_rel_l2'], ' (int8 dropped)' if j['int8_dropped'] else ''))" "$OUT/tune.json"
cp "$stage/ss_flow_candidates.json" "$OUT/" 2>/dev/null
echo "== tuned: default 25-step run and per-kernel table =="
ember bench ss-flow --stage "$stage" --gpu-fast $bench_args --batch-samples 4 --json > "$OUT/ssf_tuned.json" 2> "$OUT/ssf_tuned.err" \
  && ssf_line "$OUT/ssf_tuned.json" "tuned" || tail -n 3 "$OUT/ssf_tuned.err"
ember bench ss-flow --stage "$stage" --gpu-fast $bench_args --no-sample > "$OUT/ssf_tuned.txt" 2>&1
grep -A14 "kernel  " "$OUT/ssf_tuned.txt" | head -32
echo "== final latent, int8 vs f32 path (ember ss-flow --seed 0) =="
python3 -c "import numpy as np; np.save('$ssf_dir/cond.npy', np.random.default_rng(1).standard_normal((77, $cond_ch)).astype(np.float32)); np.save('$ssf_dir/neg.npy', np.random.default_rng(2).standard_normal((77, $cond_ch)).astype(np.float32))"
key=$(python3 -c "import json; print(json.load(open('$OUT/tune.json'))['device_key'])")
python3 -c "import json,sys; json.dump({'format': 'ember-ss-flow-candidates', 'version': 1, 'devices': {sys.argv[1]: {'options': {'int8': True}}}}, open('$ssf_dir/int8.json', 'w'))" "$key"
ember ss-flow --stage "$stage" --gpu-fast $ssf_steps --no-candidate --cond "$ssf_dir/cond.npy" --neg-cond "$ssf_dir/neg.npy" --seed 0 --out "$OUT/latent_f32.npy" >/dev/null 2>"$OUT/latent_f32.err"
ember ss-flow --stage "$stage" --gpu-fast $ssf_steps --candidate "$ssf_dir/int8.json" --cond "$ssf_dir/cond.npy" --neg-cond "$ssf_dir/neg.npy" --seed 0 --out "$OUT/latent_int8.npy" >/dev/null 2>"$OUT/latent_int8.err"
python3 -c "import numpy as np; a=np.load('$OUT/latent_f32.npy').astype(np.float64); b=np.load('$OUT/latent_int8.npy').astype(np.float64); print('final latent rel L2 int8 vs f32: %.3e (budget 1e-2)' % (np.linalg.norm(b-a)/np.linalg.norm(a)))" \
  || { tail -n 3 "$OUT/latent_f32.err" "$OUT/latent_int8.err"; }
