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
//   ASYMMETRIC   zero points (binding 5): w = (q - zp) * scale (the head); else (q - 8) * scale.
//   ACCUMULATE   y += W x (residual add) instead of y = W x.
//   SUBGROUPS    subgroup reduction; otherwise workgroup memory only (no optional feature).
#if SUBGROUPS
enable subgroups;
#endif

struct Params {
  rows: u32,
  cols: u32,
  blocks: u32,  // cols / 32
  pad: u32,
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

override WG: u32 = 256u;  // workgroupSize
override SG: u32 = 32u;   // subgroupSize (logical lane-group width)
override RPS: u32 = 1u;   // rowsPerSubgroup, at most MAX_RPS
override SPR: u32 = 1u;   // subgroupsPerRow
override L: u32 = SG * SPR;  // lanes per row group: a power of two dividing WG
const MAX_RPS = 8u;

#include "q4_block.wgsl"

// One partial per (row of the group, lane): WG * RPS floats (checked against the limit in C++).
var<workgroup> partials: array<f32, WG * RPS>;

fn load_x_block(b: u32) -> array<vec4<f32>, 8> {
  var xs: array<vec4<f32>, 8>;
  for (var j = 0u; j < 8u; j++) {
#if V3_BOTH
    xs[j] = x[b * 8u + j];
#else
    let i = b * 32u + 4u * j;
    xs[j] = vec4<f32>(x[i], x[i + 1u], x[i + 2u], x[i + 3u]);
#endif
  }
  return xs;
}

fn load_w_block(r: u32, b: u32) -> vec4<u32> {
  let blk = r * p.blocks + b;
#if V3_BOTH
  return wq[blk];
#else
  let i = blk * 4u;
  return vec4<u32>(wq[i], wq[i + 1u], wq[i + 2u], wq[i + 3u]);
#endif
}

fn block_zero(r: u32, b: u32) -> f32 {
#if ASYMMETRIC
  let i = r * p.blocks + b;
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
  // 2D grids exist only to stay under maxComputeWorkgroupsPerDimension.
  let wg_index = wg.y * nwg.x + wg.x;
  let group = li / L;
  let lane = li % L;
  let row0 = (wg_index * (WG / L) + group) * RPS;

  var acc: array<f32, MAX_RPS>;
  for (var b = lane; b < p.blocks; b += L) {
    let xs = load_x_block(b);
    for (var j = 0u; j < RPS; j++) {
      let r = row0 + j;
      if (r < p.rows) {
        acc[j] += scales[r * p.blocks + b] * q4_block_dot(load_w_block(r, b), xs, block_zero(r, b));
      }
    }
  }

#if SUBGROUPS
  // Sum inside the hardware subgroup over w = min(L, sg_size) lanes: subgroupAdd when a lane group
  // spans whole subgroups, a butterfly over the low lanes when several groups share a subgroup.
  // Then one partial per w lanes goes to workgroup memory (L / w of them per group).
  let w = min(L, sg_size);
  for (var j = 0u; j < RPS; j++) {
    var s = acc[j];
    if (w == sg_size) {
      s = subgroupAdd(s);
    } else {
      for (var off = 1u; off < w; off <<= 1u) { s += subgroupShuffleXor(s, off); }
    }
    if (li % w == 0u) { partials[j * WG + li / w] = s; }
  }
  workgroupBarrier();
  let per_group = L / w;
  if (lane < RPS) {
    var total = 0.0;
    for (var i = 0u; i < per_group; i++) { total += partials[lane * WG + group * per_group + i]; }
#else
  for (var j = 0u; j < RPS; j++) { partials[j * WG + li] = acc[j]; }
  workgroupBarrier();
  for (var stride = L / 2u; stride > 0u; stride >>= 1u) {
    if (lane < stride) {
      for (var j = 0u; j < RPS; j++) { partials[j * WG + li] += partials[j * WG + li + stride]; }
    }
    workgroupBarrier();
  }
  if (lane < RPS) {
    let total = partials[lane * WG + group * L];
#endif
    let r = row0 + lane;
    if (r < p.rows) {
#if ACCUMULATE
      y[r] += total;
#else
      y[r] = total;
#endif
    }
  }
}
