# The sparse-structure decoder stage against TRELLIS's own SparseStructureDecoder at the released
# config, on the device machine (torch there, nothing downloaded): `scripts/device_run.sh
# run:tools/golden/ss_decoder_device.sh` sources it (ember on PATH, results under $OUT). TRELLIS
# names a TRELLIS snapshot holding the four module files make_ss_decoder_goldens.py imports
# (default .dev/trellis, carried with .dev). Random weights re-drawn by ember, packed (int8), the
# pack's weights dequantized, upstream's forward on them against `ember ss-decode`: rel L2 <= 1e-3
# and IoU(logits > 0) >= 0.999. Then the released-shape pipeline end to end and its timing.
TRELLIS=${TRELLIS:-.dev/trellis}
G=/tmp/ember-ss-decoder
rm -rf "$G" && mkdir -p "$G"
log="$OUT/ss_decoder_golden.txt"
ember synth trellis-ss-decoder --seed 1 --out "$G/ck.safetensors" 2>&1 | tee -a "$log"
ember pack trellis --quiet --stage ss-decoder --from "$G/ck.safetensors" --out "$G/stage" 2>&1 | tee -a "$log"
ember dequant --stage "$G/stage" --out "$G/deq.safetensors" 2>&1 | tee -a "$log"
python3 tools/golden/make_ss_decoder_goldens.py --trellis "$TRELLIS" --config released --latent-res 16 \
  --weights "$G/deq.safetensors" --out "$G/golden" 2>&1 | tail -3 | tee -a "$log"
ember ss-decode --stage "$G/stage" --latent "$G/golden/latent.npy" --out "$G/ember.npy" 2>&1 | tee -a "$log"
python3 tools/golden/make_ss_decoder_goldens.py --compare "$G/ember.npy" --golden "$G/golden/logits.npy" 2>&1 | tee -a "$log"
# Released shapes, random weights: the whole pipeline and its timing.
P=/tmp/ember-pipeline
rm -rf "$P" && mkdir -p "$P"
ember synth trellis-pipeline --out "$P/pipe" > /dev/null
ember text-to-3d --prompt "a wooden chair" --stages "$P/pipe" --out "$P/chair.glb" --ply "$P/chair.ply" \
  --preview "$P/chair.png" 2>&1 | tail -5 | tee -a "$log"
cp "$P/chair.png" "$OUT/text_to_3d_preview.png" 2>/dev/null
ember bench text-to-3d --stages "$P/pipe" --repeats 3 > "$OUT/bench_text_to_3d.json" 2>"$OUT/bench_text_to_3d.err"
tee -a "$log" < "$OUT/bench_text_to_3d.json"
