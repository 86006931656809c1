// The fused gated MLP, slice stage: for a normed h [hidden], gate_up a symmetric 4-bit matrix
// [2 * ffn][hidden] (rows 0..ffn-1 gate, ffn..2ffn-1 up) and kquant, the down matrix stored
// k-major ([ffn][hidden], 32-blocks along the hidden outputs), workgroup s takes ffn rows
// [s * PER, s * PER + PER) and writes KSPLIT partial hidden vectors
//   partials[s * KSPLIT + j][c] = sum over its rows k = j, j + KSPLIT, ... of a_k * down[c][k],
// with a_k = silu(gate_k . h) * (up_k . h). fold_partials.wgsl sums the partials into x.
//
// Phase 1: lane groups of L lanes each reduce one gate/up dot product at a time (subgroup or
// workgroup-memory reduction, as in matvec_q4.wgsl). Phase 2: lane (word w, part j) accumulates
// 8 hidden outputs over its share of the slice's kquant rows; reads are consecutive across lanes.
//
// Options (preprocessor):
//   SUBGROUPS          subgroup reductions (else workgroup memory only).
//   LANES_IN_SUBGROUP  L is at most the adapter's smallest subgroup size: a dot product is summed
//                      by a butterfly inside the subgroup, so phase 1 has no barrier per round.
//   NORM_INPUT         h is the un-normed residual: used as rmsnorm(h) * norm_w (eps in Params),
//                      the norm computed by every workgroup for itself (the ffn norm fused in).
//   HALF_PRODUCT       (mlpHalfProduct "down") phase 2's products a * scale * q in f16, summed
//                      in f32. (No f16 for phase 1's dot products, mlpHalfDot: they moved a tiny
//                      model's logits by 1.3e-3 to 2.7e-3 rel L2, over the 1e-3 every path meets.)
#if HALF_PRODUCT
enable f16;
#endif
#if SUBGROUPS
enable subgroups;
#endif

struct Params {
  hidden: u32,
  ffn: u32,
  hblocks: u32,  // hidden / 32
  eps: f32,      // NORM_INPUT
}

@group(0) @binding(0) var<storage, read> gu_q: array<vec4<u32>>;   // one vec4 per 32-block
@group(0) @binding(1) var<storage, read> gu_scales: array<f32>;
@group(0) @binding(2) var<storage, read> kq: array<u32>;
@group(0) @binding(3) var<storage, read> k_scales: array<f32>;
@group(0) @binding(4) var<storage, read> h: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> partials: array<vec4<f32>>;
@group(0) @binding(6) var<uniform> p: Params;
#if NORM_INPUT
@group(0) @binding(7) var<storage, read> norm_w: array<vec4<f32>>;
#endif

override WG: u32 = 256u;
override L: u32 = 32u;       // lanes per dot product: a power of two dividing WG
override PER: u32 = 64u;     // ffn rows per slice
override KSPLIT: u32 = 1u;   // partial vectors per slice (phase 2 lanes per hidden word)

#include "q4_block.wgsl"

var<workgroup> red: array<f32, WG>;
var<workgroup> gu: array<f32, 2u * PER>;  // gate dots, then up dots

// Sum of v over the L lanes of li's group; valid in the group's first lane.
fn group_sum(v: f32, li: u32, sg_size: u32) -> f32 {
#if SUBGROUPS
  let w = min(L, sg_size);
  var s = v;
  if (w == sg_size) {
    s = subgroupAdd(s);
  } else {
    for (var off = 1u; off < w; off <<= 1u) { s += subgroupShuffleXor(s, off); }
  }
  if (li % w == 0u) { red[li / w] = s; }
  workgroupBarrier();
  var total = 0.0;
  let per_group = L / w;
  if (li % L == 0u) {
    for (var i = 0u; i < per_group; i++) { total += red[(li / L) * per_group + i]; }
  }
  workgroupBarrier();
  return total;
#else
  red[li] = v;
  workgroupBarrier();
  for (var stride = L / 2u; stride > 0u; stride >>= 1u) {
    if (li % L < stride) { red[li] += red[li + stride]; }
    workgroupBarrier();
  }
  let total = red[li];
  workgroupBarrier();
  return total;
#endif
}

fn silu(g: f32) -> f32 { return g / (1.0 + exp(-g)); }

#if HALF_PRODUCT
// Elements 0..3 (lo) and 4..7 (hi) of a symmetric block word, minus 8, in f16: OR-ing nibbles i
// and i + 4 into the low bits of two 1024.0h (0x6400) gives exactly 1024 + q for each.
struct Q4Half {
  lo: vec4<f16>,
  hi: vec4<f16>,
}
fn q4h_word(word: u32) -> Q4Half {
  var pairs: array<vec2<f16>, 4>;
  for (var i = 0u; i < 4u; i++) {
    pairs[i] = bitcast<vec2<f16>>(((word >> (4u * i)) & 0x000F000Fu) | 0x64006400u) - vec2<f16>(1032.0h);
  }
  return Q4Half(vec4<f16>(pairs[0].x, pairs[1].x, pairs[2].x, pairs[3].x), vec4<f16>(pairs[0].y, pairs[1].y, pairs[2].y, pairs[3].y));
}
#endif

#if NORM_INPUT
// rsqrt(mean(h^2) + eps) over the whole input; the tree works for any WG.
fn input_norm_scale(li: u32) -> f32 {
  var ss = 0.0;
  for (var i = li; i < p.hidden / 4u; i += WG) {
    let v = h[i];
    ss += dot(v, v);
  }
  red[li] = ss;
  workgroupBarrier();
  for (var n = WG; n > 1u; n = (n + 1u) / 2u) {
    let half = (n + 1u) / 2u;
    if (li + half < n) { red[li] += red[li + half]; }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();  // red is reused by phase 1
  return inverseSqrt(total / f32(p.hidden) + p.eps);
}
#endif

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32,
#if SUBGROUPS
        @builtin(subgroup_size) sg_size: u32
#endif
        ) {
#if !SUBGROUPS
  let sg_size = 1u;
#endif
  let k0 = wg.x * PER;
  let n = min(PER, max(p.ffn, k0) - k0);  // rows in this slice (0 for a trailing empty slice)
  let groups = WG / L;
  let group = li / L;
  let lane = li % L;

#if NORM_INPUT
  let scale = input_norm_scale(li);
#endif

  // Phase 1: 2n dot products, `groups` at a time (the trip count is uniform: PER, not n).
  for (var base = 0u; base < 2u * PER; base += groups) {
    let j = base + group;
    var acc = 0.0;
    if (j < 2u * n) {
      let row = select(p.ffn + k0 + (j - n), k0 + j, j < n);
      for (var b = lane; b < p.hblocks; b += L) {
        var xs: array<vec4<f32>, 8>;
#if NORM_INPUT
        for (var e = 0u; e < 8u; e++) { xs[e] = h[b * 8u + e] * scale * norm_w[b * 8u + e]; }
#else
        for (var e = 0u; e < 8u; e++) { xs[e] = h[b * 8u + e]; }
#endif
        acc += gu_scales[row * p.hblocks + b] * q4_block_dot(gu_q[row * p.hblocks + b], xs, 8.0);
      }
    }
#if LANES_IN_SUBGROUP
    var total = acc;
    for (var off = 1u; off < L; off <<= 1u) { total += subgroupShuffleXor(total, off); }
#else
    let total = group_sum(acc, li, sg_size);
#endif
    if (lane == 0u && j < 2u * n) { gu[j] = total; }
  }
  workgroupBarrier();

  // Phase 2: lane -> (hidden word w, part j); each word holds 8 outputs of one kquant block.
  let words = p.hidden / 8u;
  let part = li / words;
  if (part < KSPLIT) {
    for (var w = li % words; w < words; w += WG) {
      var lo = vec4<f32>(0.0);
      var hi = vec4<f32>(0.0);
      for (var r = part; r < n; r += KSPLIT) {
        let k = k0 + r;
        let a = silu(gu[r]) * gu[n + r];
        let s = a * k_scales[k * p.hblocks + w / 4u];
        let q = kq[k * words + w];
#if HALF_PRODUCT
        let qh = q4h_word(q);
        lo += vec4<f32>(qh.lo * f16(s));
        hi += vec4<f32>(qh.hi * f16(s));
#else
        lo += q4_low(q, 8.0) * s;
        hi += q4_high(q, 8.0) * s;
#endif
      }
      let o = ((wg.x * KSPLIT + part) * p.hidden + 8u * w) / 4u;
      partials[o] = lo;
      partials[o + 1u] = hi;
    }
  }
}
