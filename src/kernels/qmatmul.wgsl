// Y[t][r] = epilogue(sum_c W[r][c] X[t][c] + b[r]) with W int8 symmetric-quantized in the stage
// pack's tile-major layout (16-row tiles x 64-column groups, one f16 scale per row and group) and
// b f16. X and Y are f32 row-major with strides. Register-tiled: a workgroup computes BT tokens x
// BR rows, each thread MT x MR outputs (MR 8, or 16 with ROWS16; strided by the thread grid so
// workgroup-memory reads are conflict-free); K advances KS columns at a time through workgroup
// memory, where W arrives dequantized. Epilogues (structural variants):
//   GELU       y = gelu_tanh(acc + b)
//   GATE       y = y + gate[batch][r] * (acc + b)   (gated residual; gate = an adaLN chunk)
//   RESIDUAL   y = y + (acc + b)
//   ADD_ROWS   y = acc + b + add[t % add_period][r] (position embedding)
// SPLIT_K: workgroup z sums only columns [z k_chunk, (z+1) k_chunk) and writes that partial (plus
// b for z = 0) to y as [z][tokens][rows]; qmatmul_split_sum.wgsl then adds the partials and
// applies the epilogue. For matrices whose few output tiles would leave SMs idle for a long K.
// VEC4: the workgroup tiles read as vec4 (matmul_tiles.wgsl); the default geometry's choice.
// PREFETCH: the next K step's X and W are read from memory into registers while the current
// step's FMAs run, so the tile loads no longer wait on memory latency.
#include "qmatmul_params.wgsl"

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> wq: array<u32>;
@group(0) @binding(2) var<storage, read> ws: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;
#if GATE
@group(0) @binding(6) var<storage, read> gate: array<f32>;
#endif
#if ADD_ROWS
@group(0) @binding(6) var<storage, read> add: array<f32>;
#endif

override WG_T: u32 = 16u;  // threads along tokens
override WG_R: u32 = 16u;  // threads along rows (even: BR must be a multiple of the 16-row tile)
override KS: u32 = 16u;    // K step: divides 64 and is a multiple of 4
const MT: u32 = 8u;        // outputs per thread along tokens
#if ROWS16
const MR: u32 = 16u;       // outputs per thread along rows: 24 workgroup-memory floats per 128 FMAs
#else
const MR: u32 = 8u;        // outputs per thread along rows
#endif
override NT = WG_T * WG_R;
override BT = WG_T * MT;
override BR = WG_R * MR;

#include "matmul_tiles.wgsl"

#include "activation_fns.wgsl"
#if !SPLIT_K
#include "qmatmul_epilogue.wgsl"
#endif

// Twin of trellis::quant_block_index (src/trellis/stage_tensors.h): tile outer, group inner.
fn quant_block_index(tile: u32, group: u32) -> u32 {
  return tile * (p.padded_cols / 64u) + group;
}

// The X tile's element idx (k fastest) at K step k0: xs[idx % KS][idx / KS].
fn load_x(t0: u32, k0: u32, idx: u32) -> f32 {
  let t = t0 + idx / KS;
  let k = k0 + idx % KS;
  if (idx < BT * KS && t < p.tokens && k < p.cols) { return x[t * p.x_stride + k]; }
  return 0.0;
}

// The W tile's word idx (4 int8 along k, k fastest) at K step k0 and its row's scale.
struct WWord {
  word: u32,
  scale: f32,
}
fn load_w(r0: u32, k0: u32, idx: u32) -> WWord {
  let r = r0 + idx / (KS / 4u);
  let k = k0 + (idx % (KS / 4u)) * 4u;
  if (idx >= BR * (KS / 4u) || r >= p.padded_rows) { return WWord(0u, 0.0); }
  let block = quant_block_index(r / 16u, k / 64u);
  let ri = r % 16u;
  return WWord(wq[(block * 1024u + ri * 64u + (k % 64u)) >> 2u], unpack2x16float(ws[(block * 16u + ri) >> 1u])[ri & 1u]);
}

fn store_x_at(idx: u32, v: f32) {
  if (idx < BT * KS) { store_x(idx % KS, idx / KS, v); }
}

// Dequantized into wsh[k][row].
fn store_w_at(idx: u32, w: WWord) {
  if (idx >= BR * (KS / 4u)) { return; }
  let kk = (idx % (KS / 4u)) * 4u;
  let rl = idx / (KS / 4u);
  let wi = i32(w.word);
  store_w(kk, rl, f32(extractBits(wi, 0u, 8u)) * w.scale);
  store_w(kk + 1u, rl, f32(extractBits(wi, 8u, 8u)) * w.scale);
  store_w(kk + 2u, rl, f32(extractBits(wi, 16u, 8u)) * w.scale);
  store_w(kk + 3u, rl, f32(extractBits(wi, 24u, 8u)) * w.scale);
}

#if PREFETCH
override XPER = (BT * KS + NT - 1u) / NT;          // X floats per thread and K step (<= 16)
override WPER = (BR * (KS / 4u) + NT - 1u) / NT;   // W words per thread and K step (<= 8)
#endif

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let r0 = wg.x * BR;
  let t0 = wg.y * BT;
  let tr = li % WG_R;
  let tt = li / WG_R;
  var acc: array<f32, MT * MR>;
  for (var i = 0u; i < MT * MR; i++) { acc[i] = 0.0; }

  let k_begin = wg.z * p.k_chunk;
  let k_end = min(k_begin + p.k_chunk, p.padded_cols);
#if PREFETCH
  var xn: array<f32, 16>;
  var wn: array<WWord, 8>;
  for (var r = 0u; r < XPER; r++) { xn[r] = load_x(t0, k_begin, li + r * NT); }
  for (var r = 0u; r < WPER; r++) { wn[r] = load_w(r0, k_begin, li + r * NT); }
#endif
  for (var k0 = k_begin; k0 < k_end; k0 += KS) {
#if PREFETCH
    for (var r = 0u; r < XPER; r++) { store_x_at(li + r * NT, xn[r]); }
    for (var r = 0u; r < WPER; r++) { store_w_at(li + r * NT, wn[r]); }
    workgroupBarrier();
    if (k0 + KS < k_end) {  // uniform: the next step's loads fly while this one's FMAs run
      for (var r = 0u; r < XPER; r++) { xn[r] = load_x(t0, k0 + KS, li + r * NT); }
      for (var r = 0u; r < WPER; r++) { wn[r] = load_w(r0, k0 + KS, li + r * NT); }
    }
#else
    for (var idx = li; idx < BT * KS; idx += NT) { store_x_at(idx, load_x(t0, k0, idx)); }
    for (var idx = li; idx < BR * (KS / 4u); idx += NT) { store_w_at(idx, load_w(r0, k0, idx)); }
    workgroupBarrier();
#endif
    for (var kk = 0u; kk < KS; kk++) {
#if VEC4
      let a0 = xs4[kk * XS4 + tt];
      let a1 = xs4[kk * XS4 + WG_T + tt];
      let b0 = ws4[kk * WS4 + tr];
      let b1 = ws4[kk * WS4 + WG_R + tr];
      let a = array<f32, 8>(a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
#if ROWS16
      let b2 = ws4[kk * WS4 + 2u * WG_R + tr];
      let b3 = ws4[kk * WS4 + 3u * WG_R + tr];
      let b = array<f32, 16>(b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w, b2.x, b2.y, b2.z, b2.w, b3.x, b3.y, b3.z, b3.w);
#else
      let b = array<f32, 8>(b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w);
#endif
#else
      var a: array<f32, MT>;
      var b: array<f32, MR>;
      for (var i = 0u; i < MT; i++) { a[i] = xs[kk * XS + tt + i * WG_T]; }
      for (var j = 0u; j < MR; j++) { b[j] = wsh[kk * WSS + tr + j * WG_R]; }
#endif
      for (var i = 0u; i < MT; i++) {
        for (var j = 0u; j < MR; j++) { acc[i * MR + j] = fma(a[i], b[j], acc[i * MR + j]); }
      }
    }
    workgroupBarrier();
  }

  for (var j = 0u; j < MR; j++) {
    let r = r0 + row_of(tr, j);
    if (r >= p.rows) { continue; }
#if SPLIT_K
    let b = select(0.0, unpack2x16float(bias[r >> 1u])[r & 1u], wg.z == 0u);
#else
    let b = unpack2x16float(bias[r >> 1u])[r & 1u];
#endif
    for (var i = 0u; i < MT; i++) {
      let t = t0 + token_of(tt, i);
      if (t >= p.tokens) { continue; }
#if SPLIT_K
      y[(wg.z * p.tokens + t) * p.rows + r] = acc[i * MR + j] + b;
#else
      store_output(t, r, acc[i * MR + j] + b);
#endif
    }
  }
}
