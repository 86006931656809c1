#!/usr/bin/env bash
# Runs on the lent GPU machine (see scripts/device_pack.sh): installs the Vulkan loader, makes sure
# Dawn sees the real GPU (never Dawn's Null adapter), then runs the benchmarks given as arguments
# ("gpu", "llm" = bench llm with the seed candidate, "llm-tuned" = the same with the recorded H200
# tune, bench/h200_tune_runtime.json, "llm-prefetch" / "llm-qk" = that candidate with decode prefetch /
# the q/k norm + RoPE inside the decode attention off, then on (after llm-tuned), "llm-direct" = one attention
# block at every position at each one-block width 64..1024 (after llm-tuned or tune-mlp), "ss-flow-opts" = ss-flow split-K / attention prefetch options at batch 2, "tune" = ember tune then bench llm of the
# tuned pack, "tune-mlp" = the same with --allow-mlp-pair (fused vs unfused MLP timed, the faster
# kept: it names the down weight), "ss-flow", "ss-flow-attn" = flash-attention variants and mlp.2
# split-K at batch 2, "ss-flow-mm" = qmatmul variants at batch 2, "seed-check" = the ss-flow seed-configuration check against the CPU
# reference, "serve" = aggregate throughput of `ember serve` with 1/4/16 sequences, "batch" = the server's
# batched decode step alone at 1..16 sequences, greedy and sampled, with a per-kernel profile, "run:FILE" =
# source a comparison script of your own, which gets this script's environment and helpers, as
# scripts/ab.sh does) and prints a short table. Results go to $OUT/results.tgz (the device tool returns few files).
set -uo pipefail
cd "$(dirname "$0")/.."
FINAL=${OUT:-/tmp/ember-final}
OUT=/tmp/ember-out
mkdir -p "$OUT" "$FINAL"
trap 'tar czf "$FINAL/results.tgz" -C "$OUT" .' EXIT
[ -f .dev/bundle.tar.xz ] && tar xJf .dev/bundle.tar.xz -C .dev
for f in .dev/debs/*.deb; do dpkg -x "$f" /; done
ldconfig
export PATH="$PWD/.dev/bin:$PATH"
export EMBER_BINARY="$PWD/.dev/bin/ember"  # for the CLI tests of ember_tests (tests/ember_binary.h)
if ldd .dev/bin/ember | grep -q "not found"; then export LD_LIBRARY_PATH="$PWD/.dev/libs"; fi

icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
real_gpu() { ember devices --json > "$OUT/devices.json" 2>"$OUT/devices.err" && grep -q '"adapterType": "DiscreteGPU"' "$OUT/devices.json"; }
export VK_DRIVER_FILES=$icd
if ! real_gpu; then
  # The lent machines' ICD names libGLX_nvidia.so.0, with which the loader fails; a copy naming
  # libEGL_nvidia.so.0 works.
  sed 's/libGLX_nvidia.so.0/libEGL_nvidia.so.0/' "$icd" > /tmp/nvidia_icd_egl.json
  export VK_DRIVER_FILES=/tmp/nvidia_icd_egl.json
  if ! real_gpu; then
    echo "REFUSING TO MEASURE: Dawn did not get the NVIDIA GPU (only a Null/CPU adapter)." >&2
    cat "$OUT/devices.json" "$OUT/devices.err" >&2
    exit 3
  fi
fi
echo "== adapter (ember devices --json) =="
cat "$OUT/devices.json"

seed_pack() {  # the seed-000-shape model with random weights, made here (fast on 16 cores)
  if [ ! -f /tmp/ember-seed/pack/runtime.json ]; then
    ember synth lfm2 --shape seed --seed 1 --tokenizer tests/fixtures/tokenizers/ember-demo.json --out /tmp/ember-seed/hf >/dev/null
    ember pack lfm2 --from /tmp/ember-seed/hf --out /tmp/ember-seed/pack >/dev/null
  fi
  echo /tmp/ember-seed/pack
}
# True on an H200 (run: scripts that measure only there: `on_h200 || return 0`); says so otherwise.
on_h200() { grep -q '"device": "NVIDIA H200' "$OUT/devices.json" || { echo "not an H200: nothing measured"; return 1; }; }
# A copy of the seed pack under RUNTIME_JSON's kernel choices (run: scripts use it).
with_runtime() {  # RUNTIME_JSON DIR
  rm -rf "$2" && cp -r "$(seed_pack)" "$2" && cp "$1" "$2/runtime.json"
}
# A fresh `ember tune` of a seed pack copy in DIR: $OUT/NAME.txt (table), NAME.err (progress, wall
# time), NAME_runtime.json (run: scripts use it).
tune_pack() {  # DIR NAME [TUNE OPTIONS...]
  local d=$1 n=$2; shift 2
  rm -rf "$d" && cp -r "$(seed_pack)" "$d"
  /usr/bin/time -f "tune wall %e s" ember tune --model "$d" "$@" > "$OUT/$n.txt" 2> "$OUT/$n.err"
  cp "$d/runtime.json" "$OUT/${n}_runtime.json"
}
# One line from a `bench llm --json` file: LABEL, device, dispatches, TTFT, tok/s and GPU step per context.
llm_summary() {  # FILE LABEL
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], j['device']['device'] + ',', '%d dispatches,' % j['dispatches_per_token'], 'TTFT %.2f ms' % j['ttft_ms'], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us)' % (c['context'], c['decode_tok_s'], c['step_gpu_us']) for c in j['contexts']))" "$1" "$2"
}
# The recorded tune with one candidate switch off, then on (after llm-tuned made /tmp/seed_pack).
switch_bench() {
  local key=$1 name=$2
  for on in false true; do
    rm -rf /tmp/switch_pack && cp -r /tmp/seed_pack /tmp/switch_pack
    python3 -c "import json,sys; j=json.load(open('bench/h200_tune_runtime.json')); j['candidate'][sys.argv[1]]=(sys.argv[2]=='true'); json.dump(j, open('/tmp/switch_pack/runtime.json','w'), indent=1)" "$key" $on
    ember bench llm --model /tmp/switch_pack --quiet --json > "$OUT/bench_llm_${name}_$on.json"
    llm_summary "$OUT/bench_llm_${name}_$on.json" "$key $on:"
  done
  ember bench llm --model /tmp/switch_pack --quiet --profile --repeats 1 --gen 64 | tee "$OUT/bench_llm_${name}_true.txt"
}
# bench llm of PACK with BINARY into $OUT/llm_NAME.json and one summary line (run: scripts use it).
bench_llm() {  # BINARY PACK NAME [BENCH OPTIONS...]
  local b=$1 p=$2 n=$3; shift 3
  if $b bench llm --model "$p" --quiet --json "$@" > "$OUT/llm_$n.json" 2> "$OUT/llm_$n.err"; then
    llm_summary "$OUT/llm_$n.json" "$n:"
  else
    echo "$n failed:"; tail -3 "$OUT/llm_$n.err"
  fi
}
# bench batch of PACK with BINARY into $OUT/batch_NAME.json and one summary line: tok/s, dispatches
# and GPU step per row count (run: scripts use it).
bench_batch() {  # BINARY PACK NAME [BENCH OPTIONS...]
  local b=$1 p=$2 n=$3; shift 3
  if $b bench batch --model "$p" --quiet --json "$@" > "$OUT/batch_$n.json" 2> "$OUT/batch_$n.err"; then
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); d=j['device']; print(sys.argv[2], d if isinstance(d, str) else d.get('device'), ' '.join('%d rows: %.0f tok/s (%d dispatches, GPU step %.1f us)' % (r['rows'], r['aggregate_tok_s'], r['dispatches_per_step'], r['step_gpu_us']) for r in j['rows']))" "$OUT/batch_$n.json" "$n:"
  else
    echo "$n failed:"; tail -3 "$OUT/batch_$n.err"
  fi
}
# One ss-flow variant of the seed shape (random weights): forwards at batch 1 and 2, medians of 3, into
# $OUT/PREFIX_x<options>.json, and its summary line (scripts/ss_flow_summary.py). ss_flow_full adds
# the full default sampling run (medians of 5).
json_name() { echo "x$*" | tr -d '-' | tr -c 'A-Za-z0-9._\n' '_'; }  # options as a plain file name
ss_flow_variant() {  # PREFIX [OPTIONS...]
  local prefix=$1; shift
  local file; file="$OUT/${prefix}_$(json_name "$@").json"
  ember bench ss-flow --synthetic --gpu-fast --json --no-sample --repeats 3 "$@" > "$file" || { echo "ss-flow $* failed" >&2; return; }
  python3 scripts/ss_flow_summary.py "$file" "$*"
}
ss_flow_full() {  # PREFIX [OPTIONS...]
  local prefix=$1; shift
  local file; file="$OUT/${prefix}_$(json_name "$@").json"
  ember bench ss-flow --synthetic --gpu-fast --json "$@" > "$file" || { echo "ss-flow full run $* failed" >&2; return; }
  python3 scripts/ss_flow_summary.py "$file" "$*"
}
long_prompt() { python3 -c "print(' '.join(['the quick brown fox jumps over the lazy dog'] * 110))"; }

for what in "$@"; do
  case "$what" in
    gpu) ember bench gpu --json > "$OUT/bench_gpu.json" && ember bench gpu ;;
    generate)
      pack=$(seed_pack)
      for fast in "" "--gpu-fast"; do
        ember generate --model "$pack" --prompt "$(long_prompt)" -n 256 --temperature 0 --json --quiet $fast > "$OUT/generate${fast:+_fast}.json"
        python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], 'prompt', j['prompt_tokens'], 'ttft_ms %.2f' % j['ttft_ms'], 'decode_tok_s %.1f' % j['decode_tok_s'], j['device'])" "$OUT/generate${fast:+_fast}.json" "generate${fast:+ (gpu-fast)}"
      done ;;
    ss-flow)
      # Seed shape, random weights; --gpu-fast as a trusted pack would run.
      ember bench ss-flow --synthetic --gpu-fast --json > "$OUT/bench_ss_flow.json" || echo "bench ss-flow failed" >&2
      python3 -c "import json,sys; j=json.load(open(sys.argv[1])); [print(k, {x: j[k][x] for x in j[k] if x != 'kernels'}) for k in ('forward_batch1','forward_batch2','sampling','sampling_batch') if k in j]" "$OUT/bench_ss_flow.json" ;;
    seed-check)
      # Issue 5 acceptance 1 at the seed-004 configuration: GPU forward (batch 1, 2) vs the CPU
      # reference on all cores (needs ember_tests in .dev/bin: scripts/device_pack.sh copies it).
      EMBER_SEED_CHECK=1 ember_tests --gtest_filter='SsFlowSeedCheck.*' 2>&1 | tee "$OUT/seed_check.txt" ;;
    ss-flow-attn)
      # Attention variants at batch 2 (per-kernel profile: self_attn.flash), then the full default
      # run with the tiled default geometry. Sweep results: $OUT/ss_flow_attn_*.json.
      for v in "quad" "tiled 64 8 8" "tiled 64 8 8 1" "tiled 64 8 4" "tiled 64 8 4 1" "tiled 64 4 8" "tiled 64 4 8 1" \
               "tiled 64 4 4" "tiled 96 8 4" "tiled 96 8 4 1"; do
        read -r variant geometry <<< "$v"
        name=$(echo "$v" | tr ' ' '_')
        ember bench ss-flow --synthetic --gpu-fast --json --batch2-only --no-sample --repeats 3 --attention "$variant" \
          ${geometry:+--attn-geometry $geometry} > "$OUT/ss_flow_attn_$name.json" || { echo "$v failed" >&2; continue; }
        python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['forward_batch2']; k={e['kernel']: e['total_ms'] for e in f['kernels']}; print('%-14s b2 wall %.2f ms, kernels %.2f ms, self_attn.flash %.2f ms, cross_attn.flash %.2f ms' % (sys.argv[2], f['wall_ms'], f['gpu_kernels_ms'], k.get('self_attn.flash', 0), k.get('cross_attn.flash', 0)))" "$OUT/ss_flow_attn_$name.json" "$v"
      done
      for splits in 1 2 3; do  # split-K for mlp.2 (K = 3072, 6 x 64 output tiles of 128 x 128)
        ember bench ss-flow --synthetic --gpu-fast --json --batch2-only --no-sample --repeats 3 --mlp2-splits $splits \
          > "$OUT/ss_flow_mlp2_split$splits.json" || { echo "mlp2 split $splits failed" >&2; continue; }
        python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['forward_batch2']; k={e['kernel']: e['total_ms'] for e in f['kernels']}; print('mlp.2 split %s: b2 wall %.2f ms, kernels %.2f ms, mlp.2 %.2f + sum %.2f ms' % (sys.argv[2], f['wall_ms'], f['gpu_kernels_ms'], k.get('mlp.2+gate', 0), k.get('mlp.2+gate.sum', 0)))" "$OUT/ss_flow_mlp2_split$splits.json" $splits
      done
      ember bench ss-flow --synthetic --gpu-fast --attention tiled --repeats 3 ;;
    ss-flow-opts)
      # Options at batch 2: split-K of the 768 x 768 matmuls, the quad attention's K/V tile prefetch
      # (both on by default).
      for v in "" "--square-splits 1" "--square-splits 3" "--attn-no-prefetch" "--attn-queries 64" "--attn-keys 64" \
               "--attn-no-prefetch --square-splits 1"; do
        name=$(echo "x$v" | tr ' ' '_' | tr -d '-')
        ember bench ss-flow --synthetic --gpu-fast --json --batch2-only --no-sample --repeats 3 $v > "$OUT/ss_flow_opts_$name.json" || { echo "$v failed" >&2; continue; }
        python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['forward_batch2']; k={e['kernel']: e['total_ms'] for e in f['kernels']}; sq=sum(v for n,v in k.items() if n.startswith(('self_attn.to_out','cross_attn.to_q','cross_attn.to_out'))); print('%-40s b2 wall %.2f ms, kernels %.2f, self_attn.flash %.2f, cross flash %.2f, 768x768 matmuls %.2f ms' % (sys.argv[2] or 'default', f['wall_ms'], f['gpu_kernels_ms'], k.get('self_attn.flash', 0), k.get('cross_attn.flash', 0), sq))" "$OUT/ss_flow_opts_$name.json" "$v"
      done ;;
    ss-flow-mm)
      # qmatmul variants at batch 2 (scalar vs vec4 workgroup-memory reads, thread grids, K step).
      for v in "16 16 16 scalar" "16 16 16" "16 8 16" "8 16 16" "16 16 8" "16 16 32"; do
        read -r t r k scalar <<< "$v"
        name=$(echo "$v" | tr ' ' '_')
        ember bench ss-flow --synthetic --gpu-fast --json --batch2-only --no-sample --repeats 3 --matmul $t $r $k \
          ${scalar:+--matmul-scalar} > "$OUT/ss_flow_mm_$name.json" || { echo "$v failed" >&2; continue; }
        python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['forward_batch2']; k={e['kernel']: e['total_ms'] for e in f['kernels']}; mm=sum(v for n,v in k.items() if 'flash' not in n and ('mlp.' in n or 'to_' in n) and 'gelu' not in n); print('%-12s b2 wall %.2f ms, matmuls %.2f ms (to_qkv %.2f, mlp.0 %.2f, mlp.2 %.2f)' % (sys.argv[2], f['wall_ms'], mm, k.get('self_attn.to_qkv', 0), k.get('mlp.0', 0), k.get('mlp.2+gate', 0)))" "$OUT/ss_flow_mm_$name.json" "$v"
      done ;;
    llm|llm-tuned|tune|tune-mlp)
      # A seed-000-shaped pack with random weights, its candidate the seed's unchanged (the
      # seed's runtime.json describes exactly the layout the packer writes for that shape).
      if [ ! -f /tmp/seed_pack/weights.bin ]; then
        ember synth lfm2 --shape seed --out /tmp/seed_hf >/dev/null && ember pack lfm2 --from /tmp/seed_hf --out /tmp/seed_pack --quiet
        cp tests/fixtures/seed000_runtime.json /tmp/seed_pack/runtime.json
      fi
      if [ "$what" = llm ]; then
        ember bench llm --model /tmp/seed_pack --quiet --json > "$OUT/bench_llm_seed.json"
        ember bench llm --model /tmp/seed_pack --quiet --profile --repeats 1 --gen 64 | tee "$OUT/bench_llm_seed.txt"
      elif [ "$what" = llm-tuned ]; then  # the candidate of the last recorded H200 tune, without re-tuning
        rm -rf /tmp/tuned_rec_pack && cp -r /tmp/seed_pack /tmp/tuned_rec_pack && cp bench/h200_tune_runtime.json /tmp/tuned_rec_pack/runtime.json
        ember bench llm --model /tmp/tuned_rec_pack --quiet --json > "$OUT/bench_llm_tuned_rec.json"
        ember bench llm --model /tmp/tuned_rec_pack --quiet --profile --repeats 1 --gen 64 | tee "$OUT/bench_llm_tuned_rec.txt"
      elif [ "$what" = tune-mlp ]; then
        rm -rf /tmp/tuned_mlp_pack && cp -r /tmp/seed_pack /tmp/tuned_mlp_pack
        ember tune --model /tmp/tuned_mlp_pack --allow-mlp-pair --json > "$OUT/tune_mlp.json" 2> >(tee "$OUT/tune_mlp.err" >&2)
        cp /tmp/tuned_mlp_pack/runtime.json "$OUT/tuned_mlp_runtime.json"
        ember bench llm --model /tmp/tuned_mlp_pack --quiet --json > "$OUT/bench_llm_tuned_mlp.json"
        ember bench llm --model /tmp/tuned_mlp_pack --quiet --profile --repeats 1 --gen 64 | tee "$OUT/bench_llm_tuned_mlp.txt"
        ember bench llm --model /tmp/tuned_mlp_pack --quiet --gpu-fast --json > "$OUT/bench_llm_tuned_mlp_fast.json"  # no bounds checks
      else
        rm -rf /tmp/tuned_pack && cp -r /tmp/seed_pack /tmp/tuned_pack
        ember tune --model /tmp/tuned_pack --json > "$OUT/tune.json" 2> >(tee "$OUT/tune.err" >&2)
        cp /tmp/tuned_pack/runtime.json "$OUT/tuned_runtime.json"
        ember bench llm --model /tmp/tuned_pack --quiet --json > "$OUT/bench_llm_tuned.json"
        ember bench llm --model /tmp/tuned_pack --quiet --profile --repeats 1 --gen 64 | tee "$OUT/bench_llm_tuned.txt"
        python3 scripts/plot_bench.py "$OUT"/bench_llm_*.json -o "$OUT/decode_vs_context.svg" 2>/dev/null || true
      fi ;;
    serve) bash bench/serve_throughput.sh "$OUT/serve" ;;
    llm-prefetch) switch_bench decodePrefetch prefetch ;;
    llm-qk) switch_bench qkInAttention qk ;;
    llm-direct)  # one attention block everywhere at each one-block width, on this run's tune (after tune-mlp) or the recorded one
      base=bench/h200_tune_runtime.json
      [ -f /tmp/tuned_mlp_pack/runtime.json ] && base=/tmp/tuned_mlp_pack/runtime.json
      for w in 64 128 256 512 1024; do
        rm -rf /tmp/direct_pack && cp -r /tmp/seed_pack /tmp/direct_pack
        python3 -c "import json,sys; j=json.load(open(sys.argv[1])); j['candidate']['flash']=False; j['candidate']['flashDirectWorkgroup']=int(sys.argv[2]); json.dump(j, open('/tmp/direct_pack/runtime.json','w'), indent=1)" "$base" $w
        ember bench llm --model /tmp/direct_pack --quiet --context 128,1024 --json > "$OUT/bench_llm_direct_$w.json"
        python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('one block, %s threads:' % sys.argv[2], ' '.join('ctx %d: %.0f tok/s (GPU step %.1f us)' % (c['context'], c['decode_tok_s'], c['step_gpu_us']) for c in j['contexts']))" "$OUT/bench_llm_direct_$w.json" $w
      done ;;
    batch)
      pack=$(seed_pack)
      ember bench batch --model "$pack" --rows 1,2,4,8,16 --json --quiet > "$OUT/bench_batch.json"
      ember bench batch --model "$pack" --rows 1,4,16 --sample --profile --quiet | tee "$OUT/bench_batch_sample.txt" ;;
    run:*) source "${what#run:}" ;;  # a comparison script of your own, with this script's environment and helpers
    *) echo "unknown benchmark '$what'" >&2 ;;
  esac
done
