# The text encoder stage against transformers itself, on the device machine (torch and transformers
# there, nothing downloaded): `scripts/device_run.sh run:tools/golden/clip_text_device.sh` sources it
# (ember on PATH, results under $OUT). For f32 and f16 save_pretrained checkpoints of a random
# ViT-L/14-shape CLIPTextModel: ember packs the checkpoint, `ember dequant` writes the pack's weights,
# transformers runs those weights on fixed ids (module outputs by path), `ember encode-text
# --tokens-file` runs the same ids, and the two last_hidden_states must agree to rel L2 <= 1e-3.
# Then the ViT-L/14 GPU-vs-CPU-reference test and `ember bench text-encoder`.
G=/tmp/ember-clip-text
rm -rf "$G" && mkdir -p "$G"
log="$OUT/clip_text_golden.txt"
python3 tools/golden/make_clip_text_goldens.py make --out "$G" 2>&1 | tee -a "$log"
status=0
for dt in f32 f16; do
  ember pack trellis --quiet --stage text-encoder --from "$G/$dt" --out "$G/$dt-stage" 2>&1 | tee -a "$log"
  ember dequant --stage "$G/$dt-stage" --out "$G/$dt-dequant.safetensors" 2>&1 | tee -a "$log"
  python3 tools/golden/make_clip_text_goldens.py run --weights "$G/$dt-dequant.safetensors" --ids "$G/ids.npy" \
    --out "$G/$dt-golden" 2>&1 | tee -a "$log"
  ember encode-text --stage "$G/$dt-stage" --tokens-file "$G/ids.npy" --out "$G/$dt-ember.npy" 2>&1 | tee -a "$log"
  python3 tools/golden/make_clip_text_goldens.py compare "$G/$dt-ember.npy" "$G/$dt-golden/last_hidden_state.npy" \
    --tol 1e-3 2>&1 | tee -a "$log" | grep -q PASS || status=1
  cp -r "$G/$dt-golden" "$OUT/clip_text_$dt-golden"
done
echo "clip text goldens: $([ $status = 0 ] && echo PASS || echo FAIL)" | tee -a "$log"
# The ViT-L/14 shape on the GPU against the CPU reference (also in CI on lavapipe).
if command -v ember_tests >/dev/null; then
  EMBER_VITL14_CHECK=1 ember_tests --gtest_filter='TextEncoderVitL14.*:TextEncoderKernels.*' 2>&1 | tail -5 | tee -a "$log"
fi
ember bench text-encoder --stage "$G/f32-stage" --json > "$OUT/bench_text_encoder.json" 2>"$OUT/bench_text_encoder.err"
ember bench text-encoder --stage "$G/f32-stage" | tee -a "$log"
