// y = W x for one vector (decode), W a 4-bit matrix [rows][cols] (q4_block.wgsl).
//
// Geometry (override constants, the candidate's names): a workgroup of WG lanes is cut into lane
// groups of L = SG * SPR lanes (SG: subgroupSize, SPR: subgroupsPerRow); each lane group owns RPS
// (rowsPerSubgroup) consecutive rows. Lane l of a group walks blocks l, l + L, ... of its rows,
// loading each x block once for all RPS rows, and applies a block's scale once to its dot.
// SG is a *logical* width: the reduction over the L lanes is correct whatever subgroup size the
// hardware really runs (lavapipe: 8, NVIDIA: 32); see lane_group_sums below.
//
// Structural variants (preprocessor):
//   V3_BOTH      weights and x loaded as 16-byte vectors, one block per lane step ("v3_both");
//                otherwise scalar u32/f32 loads of the same block ("carried").
//   SPLIT_BLOCK  (with V3_BOTH, "split_block") eight lanes share a block, four elements each:
//                lane l takes elements 4 (l % 8) .. + 3 of blocks l / 8, l / 8 + L / 8, ..., so a
//                subgroup reads x in consecutive 16-byte pieces (coalesced) instead of one
//                128-byte block per lane, and the weights as 4-byte words. Needs L >= 8.
//   SHARED_X     (with V3_BOTH, "shared_x") every lane first loads all its weight blocks (16 bytes
//                each) into registers, then the workgroup stages x in workgroup memory (coalesced;
//                swizzled so lanes reading consecutive blocks hit distinct banks) while those loads
//                are in flight. A decode matvec is latency-bound: this issues all of a lane's
//                weight loads at once instead of one block per loop step. Needs
//                ceil(BLOCKS / L) * NR <= MAX_HELD.
//   ASYMMETRIC   zero points (binding 5): w = (q - zp) * scale (the head); else (q - 8) * scale.
//   ACCUMULATE   y += W x (residual add) instead of y = W x.
//   SUBGROUPS    subgroup reduction; otherwise workgroup memory only (no optional feature).
//   GATED        W is [2 * rows][cols] (gate rows, then up rows) and y[r] = silu(gate_r . x) *
//                (up_r . x): each lane group also computes the RPS up rows of its gate rows.
//   CONV         W is [3 * rows][cols] (LFM2's conv in_proj: B, C and x rows) and y[r] is one
//                decode step of the short convolution (conv.wgsl main): bx = (B_r . x)(x_r . x),
//                y[r] = (C_r . x) * (taps[r] . (s0, s1, bx)), state[r] = (s1, bx). Each lane group
//                computes its channels' three rows, so the conv needs no dispatch of its own.
//   NORM_INPUT   x is used as rmsnorm(x) * norm_w (eps in Params): every workgroup first sums
//                x^2 over all cols (cheap next to the matrix), then scales x while loading it.
//   PREFETCH     workgroups past the rows' own read another matrix (the next matvec's weights,
//                bound last) so that it sits in the L2 cache when its own dispatch runs. A decode
//                step is a chain of latency-bound dispatches that leave memory bandwidth idle;
//                this turns the next dispatch's memory latency into cache latency.
#if SUBGROUPS
enable subgroups;
#endif

struct Params {
  rows: u32,
  cols: u32,
  never: u32,  // 0: PREFETCH's guard store (which keeps its loads alive) never runs
  eps: f32,    // NORM_INPUT
}

#if V3_BOTH
@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
#else
@group(0) @binding(0) var<storage, read> wq: array<u32>;
#endif
@group(0) @binding(1) var<storage, read> scales: array<f32>;
#if V3_BOTH
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
#else
@group(0) @binding(2) var<storage, read> x: array<f32>;
#endif
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
#if ASYMMETRIC
@group(0) @binding(5) var<storage, read> zero_points: array<u32>;
#endif
#if CONV
#if NORM_INPUT
@group(0) @binding(6) var<storage, read> taps: array<f32>;             // [rows][3]
@group(0) @binding(7) var<storage, read_write> conv_state: array<f32>;  // [rows][2], oldest first
#else
@group(0) @binding(5) var<storage, read> taps: array<f32>;
@group(0) @binding(6) var<storage, read_write> conv_state: array<f32>;
#endif
#endif
#if NORM_INPUT
#if ASYMMETRIC
@group(0) @binding(6) var<storage, read> norm_w: array<vec4<f32>>;
#else
@group(0) @binding(5) var<storage, read> norm_w: array<vec4<f32>>;
#endif
#endif

#if PREFETCH
// Bound after every other binding: 5 fixed, then zero points, norm weight, conv taps and state.
#if ASYMMETRIC
const N_ASYM = 1u;
#else
const N_ASYM = 0u;
#endif
#if NORM_INPUT
const N_NORM = 1u;
#else
const N_NORM = 0u;
#endif
#if CONV
const N_CONV = 2u;
#else
const N_CONV = 0u;
#endif
const PF_SLOT = 5u + N_ASYM + N_NORM + N_CONV;
@group(0) @binding(PF_SLOT) var<storage, read> pf_quant: array<vec4<u32>>;
@group(0) @binding(PF_SLOT + 1u) var<storage, read> pf_scales: array<vec4<u32>>;
#endif

override WG: u32 = 256u;  // workgroupSize
override SG: u32 = 32u;   // subgroupSize (logical lane-group width)
override RPS: u32 = 1u;   // rowsPerSubgroup, at most MAX_RPS
override SPR: u32 = 1u;   // subgroupsPerRow
override L: u32 = SG * SPR;  // lanes per row group: a power of two dividing WG
// cols / 32, fixed per pipeline: the lane loops get compile-time trip counts, so the driver can
// unroll them and issue their loads together.
override BLOCKS: u32 = 32u;
#if GATED
override NR: u32 = 2u * RPS;  // rows each lane group reduces: RPS gate rows, then their up rows
const MAX_NR = 16u;
#else
#if CONV
override NR: u32 = 3u * RPS;  // RPS B rows, their C rows, their x rows
const MAX_NR = 24u;
#else
override NR: u32 = RPS;
const MAX_NR = 8u;
#endif
#endif

#include "q4_block.wgsl"

// One partial per (row of the group, lane): WG * NR floats (checked against the limit in C++).
var<workgroup> partials: array<f32, WG * NR>;

#if SHARED_X
const MAX_HELD = 16u;                         // weight blocks a lane holds in registers
override ITERS: u32 = (BLOCKS + L - 1u) / L;  // blocks per lane and row
var<workgroup> x_shared: array<vec4<f32>, BLOCKS * 8u>;
// Piece k of block b sits at b * 8 + (k + b) % 8: lanes reading the same piece of consecutive
// blocks land on different banks.
fn x_slot(i: u32) -> u32 { return (i & ~7u) + ((i + i / 8u) & 7u); }
#endif

fn x4(i: u32) -> vec4<f32> {
#if V3_BOTH
  return x[i];
#else
  return vec4<f32>(x[4u * i], x[4u * i + 1u], x[4u * i + 2u], x[4u * i + 3u]);
#endif
}

#if SUBGROUPS
var<private> sg_lanes: u32;  // the hardware subgroup size (set first thing in main)
#endif

#if NORM_INPUT
var<private> norm_scale: f32;

// The sum of every lane's v; starts and ends with a barrier. With subgroups: one partial per
// subgroup, summed by every lane (two barriers). Otherwise a tree that works for any WG (odd
// counts carry their last element); the loop bounds are uniform.
fn workgroup_sum(li: u32, v: f32) -> f32 {
#if SUBGROUPS
  let s = subgroupAdd(v);
  if (li % sg_lanes == 0u) { partials[li / sg_lanes] = s; }
  workgroupBarrier();
  var sum = 0.0;
  for (var i = 0u; i < (WG + sg_lanes - 1u) / sg_lanes; i++) { sum += partials[i]; }
  workgroupBarrier();  // partials is reused by the reduction below
  return sum;
#else
  partials[li] = v;
  workgroupBarrier();
  for (var n = WG; n > 1u; n = (n + 1u) / 2u) {
    let half = (n + 1u) / 2u;
    if (li + half < n) { partials[li] += partials[li + half]; }
    workgroupBarrier();
  }
  let total = partials[0];
  workgroupBarrier();  // partials is reused by the reduction below
  return total;
#endif
}

fn norm_scale_of(sum_squares: f32) -> f32 { return inverseSqrt(sum_squares / f32(p.cols) + p.eps); }

// rsqrt(mean(x^2) + eps) over the whole input, by every workgroup for itself.
fn input_norm_scale(li: u32) -> f32 {
  var ss = 0.0;
  for (var i = li; i < p.cols / 4u; i += WG) {
    let v = x4(i);
    ss += dot(v, v);
  }
  return norm_scale_of(workgroup_sum(li, ss));
}
#endif

// Elements 4i .. 4i + 3 of the (normed) input.
fn x_piece(i: u32) -> vec4<f32> {
#if NORM_INPUT
  return x4(i) * norm_scale * norm_w[i];
#else
  return x4(i);
#endif
}

fn load_x_block(b: u32) -> array<vec4<f32>, 8> {
  var xs: array<vec4<f32>, 8>;
  for (var j = 0u; j < 8u; j++) { xs[j] = x_piece(b * 8u + j); }
  return xs;
}

// Weight row of the group's j-th reduced row (GATED: the up rows follow all gate rows; CONV: the
// C rows, then the x rows, each block `rows` further).
fn weight_row(row0: u32, j: u32) -> u32 {
#if GATED
  if (j >= RPS) { return p.rows + row0 + j - RPS; }
#endif
#if CONV
  return (j / RPS) * p.rows + row0 + j % RPS;
#else
  return row0 + j;
#endif
}

// The group's total of reduced row j: `count` partials from slot `first` of that row.
fn reduced(j: u32, first: u32, count: u32) -> f32 {
  var t = 0.0;
  for (var i = 0u; i < count; i++) { t += partials[j * WG + first + i]; }
  return t;
}

fn silu(g: f32) -> f32 { return g / (1.0 + exp(-g)); }

#if PREFETCH
const PF_PER_THREAD = 8u;  // independent 16-byte loads per lane

// Prefetch workgroup k: the quant words first, then the scales, PF_PER_THREAD * WG vec4 each.
fn prefetch(k: u32, li: u32) {
  let per_group = WG * PF_PER_THREAD;
  let nq = arrayLength(&pf_quant);
  let q_groups = (nq + per_group - 1u) / per_group;
  var acc = vec4<u32>(0u);
  if (k < q_groups) {
    for (var i = 0u; i < PF_PER_THREAD; i++) {
      let j = k * per_group + i * WG + li;
      if (j < nq) { acc ^= pf_quant[j]; }
    }
  } else {
    let ns = arrayLength(&pf_scales);
    for (var i = 0u; i < PF_PER_THREAD; i++) {
      let j = (k - q_groups) * per_group + i * WG + li;
      if (j < ns) { acc ^= pf_scales[j]; }
    }
  }
  if (p.never == 1u) { y[0] = f32(acc.x ^ acc.y ^ acc.z ^ acc.w); }
}
#endif

fn load_w_block(r: u32, b: u32) -> vec4<u32> {
  let blk = r * BLOCKS + b;
#if V3_BOTH
  return wq[blk];
#else
  let i = blk * 4u;
  return vec4<u32>(wq[i], wq[i + 1u], wq[i + 2u], wq[i + 3u]);
#endif
}

fn block_zero(r: u32, b: u32) -> f32 {
#if ASYMMETRIC
  let i = r * BLOCKS + b;
  return f32(q4_nibble(zero_points[i / 8u], i));
#else
  return 8.0;
#endif
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32,
#if SUBGROUPS
        @builtin(subgroup_size) sg_size: u32
#endif
        ) {
#if SUBGROUPS
  sg_lanes = sg_size;
#endif
  // 2D grids exist only to stay under maxComputeWorkgroupsPerDimension.
  let wg_index = wg.y * nwg.x + wg.x;
#if PREFETCH
  let row_groups = (p.rows + (WG / L) * RPS - 1u) / ((WG / L) * RPS);
  if (wg_index >= row_groups) {  // uniform per workgroup: no barrier is skipped by part of it
    prefetch(wg_index - row_groups, li);
    return;
  }
#endif
  let group = li / L;
  let lane = li % L;
  let row0 = (wg_index * (WG / L) + group) * RPS;
  // The epilogue's own operands (the conv state and taps, the value accumulated onto), loaded
  // first: their latency then hides under the weight loads and dots instead of following the
  // reduction as one more memory round trip on the decode chain.
  let r = row0 + lane;
  let writes = lane < RPS && r < p.rows;
#if CONV
  var state = vec2<f32>(0.0);
  var tap = vec3<f32>(0.0);
  if (writes) {
    state = vec2<f32>(conv_state[2u * r], conv_state[2u * r + 1u]);
    tap = vec3<f32>(taps[3u * r], taps[3u * r + 1u], taps[3u * r + 2u]);
  }
#endif
#if ACCUMULATE
  var before = 0.0;
  if (writes) { before = y[r]; }
#endif
  var acc: array<f32, MAX_NR>;
#if SHARED_X
  // 1. This lane's weight blocks into registers: every load issued before any is used.
  var held_w: array<vec4<u32>, MAX_HELD>;
  var held_scale: array<f32, MAX_HELD>;
#if ASYMMETRIC
  var held_zp: array<u32, MAX_HELD>;  // the word holding each block's zero point
#endif
  for (var i = 0u; i < ITERS; i++) {
    let b = lane + i * L;
    for (var j = 0u; j < NR; j++) {
      if (b < BLOCKS && row0 + (j % RPS) < p.rows) {
        let blk = weight_row(row0, j) * BLOCKS + b;
        held_w[i * NR + j] = wq[blk];
        held_scale[i * NR + j] = scales[blk];
#if ASYMMETRIC
        held_zp[i * NR + j] = zero_points[blk / 8u];
#endif
      }
    }
  }
  // 2. x (times the norm weight) into workgroup memory while those loads are in flight.
  var ss = 0.0;
  for (var i = li; i < BLOCKS * 8u; i += WG) {
    let v = x[i];
#if NORM_INPUT
    ss += dot(v, v);
    x_shared[x_slot(i)] = v * norm_w[i];
#else
    x_shared[x_slot(i)] = v;
#endif
  }
#if NORM_INPUT
  norm_scale = norm_scale_of(workgroup_sum(li, ss));  // its barriers publish x_shared too
#else
  workgroupBarrier();
#endif
  // 3. The dots; the norm's scale is one factor per row, applied after.
  for (var i = 0u; i < ITERS; i++) {
    let b = lane + i * L;
    if (b < BLOCKS) {
      var xs: array<vec4<f32>, 8>;
      for (var k = 0u; k < 8u; k++) { xs[k] = x_shared[x_slot(b * 8u + k)]; }
      for (var j = 0u; j < NR; j++) {
        if (row0 + (j % RPS) < p.rows) {
#if ASYMMETRIC
          let zero = f32(q4_nibble(held_zp[i * NR + j], weight_row(row0, j) * BLOCKS + b));
#else
          let zero = 8.0;
#endif
          acc[j] += held_scale[i * NR + j] * q4_block_dot(held_w[i * NR + j], xs, zero);
        }
      }
    }
  }
#if NORM_INPUT
  for (var j = 0u; j < NR; j++) { acc[j] *= norm_scale; }
#endif
#else
#if NORM_INPUT
  norm_scale = input_norm_scale(li);
#endif
#if SPLIT_BLOCK
  let part = lane % 8u;  // elements 4 part .. 4 part + 3 of a block: the nibbles of word part / 2
  let shift = 16u * (part % 2u);
  for (var b = lane / 8u; b < BLOCKS; b += L / 8u) {
    let xv = x_piece(b * 8u + part) * Q4_UNSCALE;  // q4_scaled's 16^j undone on x, once for all rows
    for (var j = 0u; j < NR; j++) {
      if (row0 + (j % RPS) < p.rows) {
        let wr = weight_row(row0, j);
        let blk = wr * BLOCKS + b;
        acc[j] += scales[blk] * dot(q4_scaled(wq[blk][part / 2u] >> shift, q4_bias(block_zero(wr, b))), xv);
      }
    }
  }
#else
  for (var b = lane; b < BLOCKS; b += L) {
    let xs = load_x_block(b);
    for (var j = 0u; j < NR; j++) {
      if (row0 + (j % RPS) < p.rows) {
        let wr = weight_row(row0, j);
        acc[j] += scales[wr * BLOCKS + b] * q4_block_dot(load_w_block(wr, b), xs, block_zero(wr, b));
      }
    }
  }
#endif
#endif

#if SUBGROUPS
  // Sum inside the hardware subgroup over w = min(L, sg_size) lanes: subgroupAdd when a lane group
  // spans whole subgroups, a butterfly over the low lanes when several groups share a subgroup.
  // Then one partial per w lanes goes to workgroup memory (L / w of them per group).
  let w = min(L, sg_size);
  for (var j = 0u; j < NR; j++) {
    var s = acc[j];
    if (w == sg_size) {
      s = subgroupAdd(s);
    } else {
      for (var off = 1u; off < w; off <<= 1u) { s += subgroupShuffleXor(s, off); }
    }
    if (li % w == 0u) { partials[j * WG + li / w] = s; }
  }
  workgroupBarrier();
  let first = group * (L / w);
  let count = L / w;
#else
  for (var j = 0u; j < NR; j++) { partials[j * WG + li] = acc[j]; }
  workgroupBarrier();
  for (var stride = L / 2u; stride > 0u; stride >>= 1u) {
    if (lane < stride) {
      for (var j = 0u; j < NR; j++) { partials[j * WG + li] += partials[j * WG + li + stride]; }
    }
    workgroupBarrier();
  }
  let first = group * L;
  let count = 1u;
#endif
  if (writes) {
    let total = reduced(lane, first, count);
#if GATED
    y[r] = silu(total) * reduced(lane + RPS, first, count);
#else
#if CONV
    let bx = total * reduced(lane + 2u * RPS, first, count);
    y[r] = reduced(lane + RPS, first, count) * (tap.x * state.x + tap.y * state.y + tap.z * bx);
    conv_state[2u * r] = state.y;
    conv_state[2u * r + 1u] = bx;
#else
#if ACCUMULATE
    y[r] = before + total;
#else
    y[r] = total;
#endif
#endif
#endif
  }
}
