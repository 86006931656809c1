// The int8 path of qmatmul (qmatmul.wgsl has the f32 one and the epilogues): Y[t][r] =
// epilogue(sum_g sx[t][g] sw[r][g] sum_{c in g} qx[t][c] qw[r][c] + b[r]), the inner sums over one
// 64-column group as packed 4 x int8 dot products (dot4I8Packed) into i32, scaled into f32 once a
// group. X arrives quantized by qmatmul_quantize.wgsl (int8 per token and group, f32 scales after
// the data); W is the pack's tile-major int8 with f16 scales, copied word for word. A workgroup
// computes BT tokens x BR rows, each thread MT x MR outputs strided by the thread grid; K advances
// one group (16 words) at a time through workgroup memory. SPLIT_K as in qmatmul.wgsl.
#include "qmatmul_params.wgsl"

@group(0) @binding(0) var<storage, read> xq: array<u32>;
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
override WG_R: u32 = 16u;  // threads along rows
const MT: u32 = 8u;        // outputs per thread along tokens
#if ROWS16
const MR: u32 = 16u;
#else
const MR: u32 = 8u;
#endif
override NT = WG_T * WG_R;
override BT = WG_T * MT;
override BR = WG_R * MR;

var<workgroup> xw: array<u32, 16u * BT>;  // [word of the group][token]
var<workgroup> ww: array<u32, 16u * BR>;  // [word of the group][row]
var<workgroup> xsc: array<f32, BT>;
var<workgroup> wsc: array<f32, BR>;

#include "activation_fns.wgsl"
#if !SPLIT_K
#include "qmatmul_epilogue.wgsl"
#endif

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let r0 = wg.x * BR;
  let t0 = wg.y * BT;
  let tr = li % WG_R;
  let tt = li / WG_R;
  let groups = p.padded_cols / 64u;
  let x_words = p.padded_cols / 4u;
  let x_scales = p.tokens * x_words;
  var acc: array<f32, MT * MR>;
  for (var i = 0u; i < MT * MR; i++) { acc[i] = 0.0; }
  var dots: array<i32, MT * MR>;

  let g_begin = wg.z * (p.k_chunk / 64u);
  let g_end = min(g_begin + p.k_chunk / 64u, groups);
  for (var g = g_begin; g < g_end; g++) {
    for (var idx = li; idx < 16u * BT; idx += NT) {
      let t = t0 + idx / 16u;
      var v = 0u;
      if (t < p.tokens) { v = xq[t * x_words + g * 16u + idx % 16u]; }
      xw[(idx % 16u) * BT + idx / 16u] = v;
    }
    // Rows r0 .. r0 + BR - 1 are whole 16-row tiles: tile (r / 16, g) holds 256 words, row-major.
    for (var idx = li; idx < 16u * BR; idx += NT) {
      let r = r0 + idx / 16u;
      var v = 0u;
      if (r < p.padded_rows) { v = wq[((r / 16u) * groups + g) * 256u + (r % 16u) * 16u + idx % 16u]; }
      ww[(idx % 16u) * BR + idx / 16u] = v;
    }
    for (var idx = li; idx < BT; idx += NT) {
      let t = t0 + idx;
      xsc[idx] = select(0.0, bitcast<f32>(xq[x_scales + t * groups + g]), t < p.tokens);
    }
    for (var idx = li; idx < BR; idx += NT) {
      let r = r0 + idx;
      var s = 0.0;
      if (r < p.padded_rows) {
        let si = ((r / 16u) * groups + g) * 16u + r % 16u;
        s = unpack2x16float(ws[si >> 1u])[si & 1u];
      }
      wsc[idx] = s;
    }
    workgroupBarrier();
    for (var i = 0u; i < MT * MR; i++) { dots[i] = 0; }
    for (var k = 0u; k < 16u; k++) {
      var a: array<u32, MT>;
      var b: array<u32, MR>;
      for (var i = 0u; i < MT; i++) { a[i] = xw[k * BT + tt + i * WG_T]; }
      for (var j = 0u; j < MR; j++) { b[j] = ww[k * BR + tr + j * WG_R]; }
      for (var i = 0u; i < MT; i++) {
        for (var j = 0u; j < MR; j++) { dots[i * MR + j] += dot4I8Packed(a[i], b[j]); }
      }
    }
    for (var i = 0u; i < MT; i++) {
      let sx = xsc[tt + i * WG_T];
      for (var j = 0u; j < MR; j++) { acc[i * MR + j] = fma(f32(dots[i * MR + j]), sx * wsc[tr + j * WG_R], acc[i * MR + j]); }
    }
    workgroupBarrier();
  }

  for (var j = 0u; j < MR; j++) {
    let r = r0 + tr + j * WG_R;
    if (r >= p.rows) { continue; }
#if SPLIT_K
    let b = select(0.0, unpack2x16float(bias[r >> 1u])[r & 1u], wg.z == 0u);
#else
    let b = unpack2x16float(bias[r >> 1u])[r & 1u];
#endif
    for (var i = 0u; i < MT; i++) {
      let t = t0 + tt + i * WG_T;
      if (t >= p.tokens) { continue; }
#if SPLIT_K
      y[(wg.z * p.tokens + t) * p.rows + r] = acc[i * MR + j] + b;
#else
      store_output(t, r, acc[i * MR + j] + b);
#endif
    }
  }
}
