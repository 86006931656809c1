// Y[v][r] = sum_c W[r][c] X[v][c] for several vectors at once (batched decode): W a 4-bit matrix
// [rows][cols] (q4_block.wgsl) read once for all of them, X [vectors][cols], Y [vectors][rows] f32.
//
// A workgroup of WG lanes is cut into lane groups of L lanes, one row per group (WG / L rows per
// workgroup). Eight lanes share a 32-block, four elements each: lane l of a group takes elements
// 4 (l % 8) .. + 3 of blocks l / 8, l / 8 + L / 8, ... of its row, decodes them once and dots them
// with the same four elements of every vector. So the lanes of a subgroup read consecutive
// 16-byte pieces of a vector (coalesced; the vectors, vectors * cols * 4 bytes, stay in cache)
// rather than one 128-byte block each. NV bounds the vector count; L >= 8.
//
// Structural variants (preprocessor), as in matvec_q4.wgsl:
//   ASYMMETRIC   zero points (binding 5): w = (q - zp) * scale (the head); else (q - 8) * scale.
//   ACCUMULATE   y += W x (residual add) instead of y = W x.
//   SUBGROUPS    subgroup reduction; otherwise workgroup memory only (no optional feature).
#if SUBGROUPS
enable subgroups;
#endif

struct Params {
  rows: u32,
  cols: u32,
  blocks: u32,   // cols / 32
  vectors: u32,  // 1..NV
}

@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;  // one 32-block per element
@group(0) @binding(1) var<storage, read> scales: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
#if ASYMMETRIC
@group(0) @binding(5) var<storage, read> zero_points: array<u32>;
#endif

override WG: u32 = 256u;  // lanes per workgroup
override L: u32 = 32u;    // lanes per row: a power of two >= 8 dividing WG
override NV: u32 = 16u;   // most vectors per dispatch, at most MAX_NV
const MAX_NV = 16u;       // accumulator array size (function-scope arrays need a const size)

#include "q4_block.wgsl"

// One partial per (vector, lane).
var<workgroup> partials: array<f32, WG * NV>;

fn block_zero(i: u32) -> f32 {
#if ASYMMETRIC
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
  let r = wg_index * (WG / L) + group;

  var acc: array<f32, MAX_NV>;
  for (var v = 0u; v < NV; v++) { acc[v] = 0.0; }
  let part = lane % 8u;  // elements 4 part .. 4 part + 3 of each block: nibbles of word part / 2
  let shift = 16u * (part % 2u);
  if (r < p.rows) {
    for (var b = lane / 8u; b < p.blocks; b += L / 8u) {
      let blk = r * p.blocks + b;
      let w = q4_scaled(wq[blk][part / 2u] >> shift, q4_bias(block_zero(blk))) * (Q4_UNSCALE * scales[blk]);
      for (var v = 0u; v < NV; v++) {
        if (v < p.vectors) { acc[v] += dot(w, x[(v * p.blocks + b) * 8u + part]); }
      }
    }
  }

#if SUBGROUPS
  // Sum inside the hardware subgroup over sw = min(L, sg_size) lanes (subgroupAdd when a row's
  // lanes span whole subgroups, a butterfly when several rows share one), then one partial per sw
  // lanes goes to workgroup memory.
  let sw = min(L, sg_size);
  for (var v = 0u; v < NV; v++) {
    if (v < p.vectors) {  // uniform: p is a uniform buffer
      var s = acc[v];
      if (sw == sg_size) {
        s = subgroupAdd(s);
      } else {
        for (var off = 1u; off < sw; off <<= 1u) { s += subgroupShuffleXor(s, off); }
      }
      if (li % sw == 0u) { partials[v * WG + li / sw] = s; }
    }
  }
  workgroupBarrier();
  let per_group = L / sw;
  for (var v = lane; v < p.vectors; v += L) {
    var total = 0.0;
    for (var i = 0u; i < per_group; i++) { total += partials[v * WG + group * per_group + i]; }
#else
  for (var v = 0u; v < NV; v++) {
    if (v < p.vectors) { partials[v * WG + li] = acc[v]; }
  }
  workgroupBarrier();
  for (var stride = L / 2u; stride > 0u; stride >>= 1u) {
    if (lane < stride) {
      for (var v = 0u; v < p.vectors; v++) { partials[v * WG + li] += partials[v * WG + li + stride]; }
    }
    workgroupBarrier();
  }
  for (var v = lane; v < p.vectors; v += L) {
    let total = partials[v * WG + group * L];
#endif
    if (r < p.rows) {
#if ACCUMULATE
      y[v * p.rows + r] += total;
#else
      y[v * p.rows + r] = total;
#endif
    }
  }
}
