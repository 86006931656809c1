// Y[t][r] = sum_c W[r][c] X[t][c] for T tokens (prefill): W a symmetric 4-bit matrix [rows][cols]
// (q4_block.wgsl), X [T][cols] and Y [T][rows] f32.
//
// A workgroup owns a tile of TR rows x TT tokens and walks the columns one 32-block at a time:
// it dequantizes the TR x 32 weight tile into workgroup memory once and reuses it for all TT
// tokens (and the TT x 32 activation tile for all TR rows); each lane computes a 4 x 4 block of
// outputs. Edges (rows or tokens not a multiple of the tile) read zeros and write nothing.
// ACCUMULATE: Y += W X (residual add) instead of Y = W X.

struct Params {
  rows: u32,
  cols: u32,
  blocks: u32,  // cols / 32
  tokens: u32,
}

@group(0) @binding(0) var<storage, read> wq: array<u32>;
@group(0) @binding(1) var<storage, read> scales: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

override TR: u32 = 64u;  // rows per tile, a multiple of 4
override TT: u32 = 64u;  // tokens per tile, a multiple of 4
override WG: u32 = (TR / 4u) * (TT / 4u);
const MICRO = 4u;

#include "q4_block.wgsl"

// Column-major inside the block (index k * TR + row) so the inner loop reads along rows.
var<workgroup> w_tile: array<f32, 32u * TR>;
var<workgroup> x_tile: array<f32, 32u * TT>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let row_base = wg.x * TR;
  let tok_base = wg.y * TT;
  let lanes_r = TR / MICRO;
  let my_r = (li % lanes_r) * MICRO;  // first of this lane's 4 rows inside the tile
  let my_t = (li / lanes_r) * MICRO;  // first of its 4 tokens

  var acc: array<vec4<f32>, 4>;  // acc[i][j]: token my_t + i, row my_r + j
  for (var b = 0u; b < p.blocks; b++) {
    // One u32 word (8 weights) per task: TR rows x 4 words.
    for (var task = li; task < TR * 4u; task += WG) {
      let r = task / 4u;
      let k = task % 4u;
      let row = row_base + r;
      var lo = vec4<f32>(0.0);
      var hi = vec4<f32>(0.0);
      if (row < p.rows) {
        let word = wq[(row * p.blocks + b) * 4u + k];
        let s = scales[row * p.blocks + b];
        lo = q4_low(word, 8.0) * s;
        hi = q4_high(word, 8.0) * s;
      }
      for (var e = 0u; e < 4u; e++) {
        w_tile[(8u * k + e) * TR + r] = lo[e];
        w_tile[(8u * k + 4u + e) * TR + r] = hi[e];
      }
    }
    for (var task = li; task < TT * 32u; task += WG) {
      let t = task / 32u;
      let k = task % 32u;
      let tok = tok_base + t;
      var v = 0.0;
      if (tok < p.tokens) { v = x[tok * p.cols + b * 32u + k]; }
      x_tile[k * TT + t] = v;
    }
    workgroupBarrier();
    for (var k = 0u; k < 32u; k++) {
      let wv = vec4<f32>(w_tile[k * TR + my_r], w_tile[k * TR + my_r + 1u], w_tile[k * TR + my_r + 2u],
                         w_tile[k * TR + my_r + 3u]);
      for (var i = 0u; i < MICRO; i++) { acc[i] += x_tile[k * TT + my_t + i] * wv; }
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < MICRO; i++) {
    let tok = tok_base + my_t + i;
    if (tok >= p.tokens) { break; }
    for (var j = 0u; j < MICRO; j++) {
      let row = row_base + my_r + j;
      if (row < p.rows) {
#if ACCUMULATE
        y[tok * p.rows + row] += acc[i][j];
#else
        y[tok * p.rows + row] = acc[i][j];
#endif
      }
    }
  }
}
