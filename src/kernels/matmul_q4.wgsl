// Y[t][r] = sum_c W[r][c] X[t][c] for T tokens (prefill): W a symmetric 4-bit matrix [rows][cols]
// (q4_block.wgsl), X [T][cols] and Y [T][rows] f32, f32 arithmetic.
//
// Register-tiled like qmatmul.wgsl: a workgroup computes BT = MT WG_T tokens x BR = MR WG_R rows,
// each thread MT x MR outputs (8 x 8, MICRO4: 4 x 4) strided by the thread grid (workgroup-memory
// reads conflict-free);
// K advances KS columns at a time through workgroup memory, where W arrives dequantized (one u32
// word = 8 weights per load task). Edges (rows, tokens or cols not a multiple of the tile) read
// zeros and write nothing.
// KMAJOR: W is stored transposed, [cols][rows] with 32-blocks along the rows (the MLP's
// down.kquant), so one word holds 8 consecutive rows of one column.
// ACCUMULATE: Y += W X (residual add) instead of Y = W X.
// SPLIT_K: workgroup z sums only columns [z k_chunk, (z+1) k_chunk) (whole 32-blocks) and writes
// that partial to y[z][T][rows]; matmul_q4_split_sum.wgsl adds the partials into Y. More
// workgroups for shapes whose outputs alone do not fill the GPU.
// VEC4: the workgroup tiles read as vec4 (matmul_tiles.wgsl).
// GATED: W is [rows = 2 F][cols], gate rows then up rows, and Y [T][F] = silu(gate) * up (the
// MLP's gate_up with its activation as the epilogue). A workgroup's first BR / 2 tile rows are
// gate rows, the rest the matching up rows, so a thread holds both halves of its outputs (rows j
// and j + MR / 2 of its micro tile; not with VEC4 and MICRO4, whose runs of 4 do not split).

struct Params {
  rows: u32,
  cols: u32,
  tokens: u32,
  k_chunk: u32,  // columns per split (SPLIT_K); cols otherwise
}

@group(0) @binding(0) var<storage, read> wq: array<u32>;
@group(0) @binding(1) var<storage, read> scales: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override WG_T: u32 = 16u;  // threads along tokens
override WG_R: u32 = 16u;  // threads along rows
override KS: u32 = 16u;    // K step: 8, 16 or 32 (a whole number of words inside one block)
#if MICRO4
const MT: u32 = 4u;        // outputs per thread along tokens (MICRO4: smaller tiles, more workgroups)
const MR: u32 = 4u;        // outputs per thread along rows
#else
const MT: u32 = 8u;        // outputs per thread along tokens
const MR: u32 = 8u;        // outputs per thread along rows
#endif
override NT = WG_T * WG_R;
override BT = WG_T * MT;
override BR = WG_R * MR;

#include "q4_block.wgsl"
#include "matmul_tiles.wgsl"

#if GATED
// The weight row of tile row rl in workgroup column `col`: gate row g or up row F + g, with
// g = col BR / 2 + rl % (BR / 2); past the last gate row none (u32 max, read as zeros).
fn gated_row(col: u32, rl: u32) -> u32 {
  let F = p.rows / 2u;
  let g = col * (BR / 2u) + rl % (BR / 2u);
  if (g >= F) { return 0xffffffffu; }
  return select(g, F + g, rl >= BR / 2u);
}
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
  let k_end = min(k_begin + p.k_chunk, p.cols);
  for (var k0 = k_begin; k0 < k_end; k0 += KS) {
    // X tile, transposed into xs[k][token].
    for (var idx = li; idx < BT * KS; idx += NT) {
      let kk = idx % KS;
      let tl = idx / KS;
      let t = t0 + tl;
      let k = k0 + kk;
      var v = 0.0;
      if (t < p.tokens && k < p.cols) { v = x[t * p.cols + k]; }
      store_x(kk, tl, v);
    }
#if KMAJOR
    // W tile: word (k, 8 rows) -> wsh[k][8 rows]; rows is a multiple of 32.
    for (var idx = li; idx < KS * (BR / 8u); idx += NT) {
      let rw = idx % (BR / 8u);
      let kk = idx / (BR / 8u);
      let r = r0 + rw * 8u;
      let k = k0 + kk;
      var lo = vec4<f32>(0.0);
      var hi = vec4<f32>(0.0);
      if (r < p.rows && k < p.cols) {
        let e = k * p.rows + r;
        let s = scales[e / 32u];
        let word = wq[e / 8u];
        lo = q4_low(word, 8.0) * s;
        hi = q4_high(word, 8.0) * s;
      }
      for (var i = 0u; i < 4u; i++) {
        store_w(kk, rw * 8u + i, lo[i]);
        store_w(kk, rw * 8u + 4u + i, hi[i]);
      }
    }
#else
    // W tile: word (row, 8 columns) -> wsh[8 columns][row]; cols is a multiple of 32.
    for (var idx = li; idx < BR * (KS / 8u); idx += NT) {
      let kw = idx % (KS / 8u);
      let rl = idx / (KS / 8u);
#if GATED
      let r = gated_row(wg.x, rl);
#else
      let r = r0 + rl;
#endif
      var lo = vec4<f32>(0.0);
      var hi = vec4<f32>(0.0);
      if (r < p.rows) {
        let e = r * p.cols + k0 + kw * 8u;
        let s = scales[e / 32u];
        let word = wq[e / 8u];
        lo = q4_low(word, 8.0) * s;
        hi = q4_high(word, 8.0) * s;
      }
      for (var i = 0u; i < 4u; i++) {
        store_w(kw * 8u + i, rl, lo[i]);
        store_w(kw * 8u + 4u + i, rl, hi[i]);
      }
    }
#endif
    workgroupBarrier();
    for (var kk = 0u; kk < KS; kk++) {
      var a: array<f32, MT>;
      var b: array<f32, MR>;
#if VEC4
      for (var i4 = 0u; i4 < MT / 4u; i4++) {
        let v = xs4[kk * XS4 + i4 * WG_T + tt];
        for (var c = 0u; c < 4u; c++) { a[4u * i4 + c] = v[c]; }
      }
      for (var j4 = 0u; j4 < MR / 4u; j4++) {
        let v = ws4[kk * WS4 + j4 * WG_R + tr];
        for (var c = 0u; c < 4u; c++) { b[4u * j4 + c] = v[c]; }
      }
#else
      for (var i = 0u; i < MT; i++) { a[i] = xs[kk * XS + tt + i * WG_T]; }
      for (var j = 0u; j < MR; j++) { b[j] = wsh[kk * WSS + tr + j * WG_R]; }
#endif
      for (var i = 0u; i < MT; i++) {
        for (var j = 0u; j < MR; j++) { acc[i * MR + j] = fma(a[i], b[j], acc[i * MR + j]); }
      }
    }
    workgroupBarrier();
  }

#if GATED
  let F = p.rows / 2u;
  for (var j = 0u; j < MR / 2u; j++) {
    let r = wg.x * (BR / 2u) + row_of(tr, j);
    if (r >= F) { continue; }
    for (var i = 0u; i < MT; i++) {
      let t = t0 + token_of(tt, i);
      if (t >= p.tokens) { continue; }
      let g = acc[i * MR + j];
      y[t * F + r] = g / (1.0 + exp(-g)) * acc[i * MR + j + MR / 2u];
    }
  }
  return;
#endif
  for (var j = 0u; j < MR; j++) {
    let r = r0 + row_of(tr, j);
    if (r >= p.rows) { continue; }
    for (var i = 0u; i < MT; i++) {
      let t = t0 + token_of(tt, i);
      if (t >= p.tokens) { continue; }
      let o = t * p.rows + r;
#if SPLIT_K
      y[wg.z * p.tokens * p.rows + o] = acc[i * MR + j];
#else
#if ACCUMULATE
      y[o] = y[o] + acc[i * MR + j];
#else
      y[o] = acc[i * MR + j];
#endif
#endif
    }
  }
}
