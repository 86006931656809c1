// y = W x (or y += W x) for one vector and a tall 4-bit matrix (q4_block.wgsl), with no workgroup
// memory and no barrier: the "strided" variant of the decode matvec (matvec_q4.h).
//
// Why: the other variants make every workgroup stage x (and its norm) for a few rows, behind
// barriers. For a tall matrix (the head: 65,536 rows, 43 MB) that means thousands of workgroups,
// each paying an L2 round trip and barriers before its dots, in several waves; the head ran at
// ~1.2 TB/s whatever their geometry, while a plain read of its bytes reaches ~1.9 TB/s with ~1,000
// workgroups (bench/NOTES.md, 2026-12-06). Here each lane group (L = SG * SPR lanes, inside one
// hardware subgroup) loads its share of x into registers once, sums the norm with subgroup
// operations, loads the weight blocks of its RPS rows (strided over the whole grid: row g, g + G,
// ... for lane group g of G) and reduces each row by a subgroup butterfly. Lane groups never wait
// for each other.
//
// Lane l of a group holds x blocks l, l + L, ... (XB of them) and, for each row, multiplies the
// weight blocks with the same indices.
//   ASYMMETRIC   zero points (binding 5): w = (q - zp) * scale (the head); else (q - 8) * scale.
//   ACCUMULATE   y += W x instead of y = W x.
//   NORM_INPUT   x is used as rmsnorm(x) * norm_w (eps in Params).
//   PREFETCH     workgroups past the rows' own read the next matvec's weights (matvec_prefetch.wgsl).
enable subgroups;

struct Params {
  rows: u32,
  cols: u32,
  never: u32,  // 0: PREFETCH's guard store (which keeps its loads alive) never runs
  eps: f32,    // NORM_INPUT
}

@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> scales: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
#if ASYMMETRIC
@group(0) @binding(5) var<storage, read> zero_points: array<u32>;
const N_ASYM = 1u;
#else
const N_ASYM = 0u;
#endif
#if NORM_INPUT
@group(0) @binding(5u + N_ASYM) var<storage, read> norm_w: array<vec4<f32>>;
const N_NORM = 1u;
#else
const N_NORM = 0u;
#endif
#if PREFETCH
@group(0) @binding(5u + N_ASYM + N_NORM) var<storage, read> pf_quant: array<vec4<u32>>;
@group(0) @binding(6u + N_ASYM + N_NORM) var<storage, read> pf_scales: array<vec4<u32>>;
#endif

override WG: u32 = 256u;     // workgroupSize
override SG: u32 = 32u;      // subgroupSize
override RPS: u32 = 8u;      // rowsPerSubgroup: rows each lane group makes, one after the other
override SPR: u32 = 1u;      // subgroupsPerRow
override L: u32 = SG * SPR;  // lanes per row: a power of two, at most the hardware subgroup size
override BLOCKS: u32 = 32u;  // cols / 32
override XB: u32 = (BLOCKS + L - 1u) / L;  // x blocks a lane holds
const MAX_XB = 4u;                          // C++ checks XB <= MAX_XB
const MAX_HELD = 16u;                       // and RPS * XB <= MAX_HELD (weight blocks a lane holds)

#include "q4_block.wgsl"
#if PREFETCH
#include "matvec_prefetch.wgsl"
#endif

// The sum of v over this lane's group of L lanes (the low bits of the subgroup lane index), in
// every lane of the group. sg_size is uniform (passed from main) and at least L.
fn group_sum(v: f32, sg_size: u32) -> f32 {
  if (L == sg_size) { return subgroupAdd(v); }
  var s = v;
  for (var off = 1u; off < L; off <<= 1u) { s += subgroupShuffleXor(s, off); }
  return s;
}

fn block_zero(blk: u32) -> f32 {
#if ASYMMETRIC
  return f32(q4_nibble(zero_points[blk / 8u], blk));
#else
  return 8.0;
#endif
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_size) sg_size: u32) {
  let wg_index = wg.y * nwg.x + wg.x;  // 2D grids exist only to stay under the per-dimension limit
  let row_groups = (p.rows + (WG / L) * RPS - 1u) / ((WG / L) * RPS);
#if PREFETCH
  if (wg_index >= row_groups) {
    prefetch(wg_index - row_groups, li);
    return;
  }
#endif
  let lane = li % L;
  let group = wg_index * (WG / L) + li / L;
  let stride = row_groups * (WG / L);  // lane groups in the grid

  // x blocks lane, lane + L, ... into registers; the norm's sum of squares over the whole group.
  var xr: array<vec4<f32>, MAX_XB * 8u>;
  var ss = 0.0;
  for (var i = 0u; i < XB; i++) {
    let b = lane + i * L;
    for (var q = 0u; q < 8u; q++) {
      var v = vec4<f32>(0.0);
      if (b < BLOCKS) { v = x[b * 8u + q]; }
#if NORM_INPUT
      ss += dot(v, v);
      if (b < BLOCKS) { v *= norm_w[b * 8u + q]; }
#endif
      xr[i * 8u + q] = v;
    }
  }
#if NORM_INPUT
  let scale = inverseSqrt(group_sum(ss, sg_size) / f32(p.cols) + p.eps);
#else
  let scale = 1.0;
#endif

  // The rows' weight blocks into registers, every load issued before any is used (a lane group's
  // rows one after the other, each load waiting for the one before, measured 46 us for the head
  // against 38 for shared_x). Rows past the end read the last row and store nothing; every lane
  // runs every row (the butterfly needs the whole subgroup).
  var held_w: array<vec4<u32>, MAX_HELD>;
  var held_s: array<f32, MAX_HELD>;
  var held_z: array<f32, MAX_HELD>;
  for (var k = 0u; k < RPS; k++) {
    let rr = min(group + k * stride, p.rows - 1u);
    for (var i = 0u; i < XB; i++) {
      let b = lane + i * L;
      if (b < BLOCKS) {
        let blk = rr * BLOCKS + b;
        held_w[k * XB + i] = wq[blk];
        held_s[k * XB + i] = scales[blk];
        held_z[k * XB + i] = block_zero(blk);
      }
    }
  }
  for (var k = 0u; k < RPS; k++) {
    let r = group + k * stride;
    var acc = 0.0;
    for (var i = 0u; i < XB; i++) {
      if (lane + i * L < BLOCKS) {
        var xs: array<vec4<f32>, 8>;
        for (var q = 0u; q < 8u; q++) { xs[q] = xr[i * 8u + q]; }
        acc += held_s[k * XB + i] * q4_block_dot(held_w[k * XB + i], xs, held_z[k * XB + i]);
      }
    }
    let total = group_sum(acc, sg_size) * scale;
    if (lane == 0u && r < p.rows) {
#if ACCUMULATE
      y[r] += total;
#else
      y[r] = total;
#endif
    }
  }
}
