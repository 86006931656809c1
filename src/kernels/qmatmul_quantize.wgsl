// Activations for qmatmul_i8.wgsl: X f32 [tokens][x_stride] (first `cols` columns read) quantized
// per token and 64-column group to int8, symmetric, round to nearest:
//   xq[t * padded_cols / 4 + c / 4], byte c % 4 (low byte first) = round(x[t][c] / s)
//   scale s = max|x[t][group]| / 127 as f32 bits at xq[tokens * padded_cols / 4 + t * groups + g]
// (0 for an all-zero group; columns past `cols` quantize to 0). One group is 16 lanes of 4 columns;
// a workgroup of 256 does 16 groups.
#include "qmatmul_params.wgsl"

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> xq: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> lane_max: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let groups = p.padded_cols / 64u;
  let flat = (wg.y * nwg.x + wg.x) * 16u + li / 16u;  // this lane's (token, group)
  let lane = li % 16u;
  let t = flat / groups;
  let g = flat % groups;
  let c0 = g * 64u + lane * 4u;
  var v = vec4<f32>(0.0);
  if (t < p.tokens) {
    for (var i = 0u; i < 4u; i++) {
      if (c0 + i < p.cols) { v[i] = x[t * p.x_stride + c0 + i]; }
    }
  }
  let a = abs(v);
  lane_max[li] = max(max(a.x, a.y), max(a.z, a.w));
  workgroupBarrier();
  var amax = 0.0;
  let first = li - lane;
  for (var i = 0u; i < 16u; i++) { amax = max(amax, lane_max[first + i]); }
  if (t >= p.tokens) { return; }
  let inv = select(0.0, 127.0 / amax, amax > 0.0);
  let q = vec4<i32>(clamp(round(v * inv), vec4<f32>(-127.0), vec4<f32>(127.0)));
  let b = vec4<u32>(q) & vec4<u32>(0xffu);
  xq[t * (p.padded_cols / 4u) + c0 / 4u] = b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
  if (lane == 0u) { xq[p.tokens * (p.padded_cols / 4u) + t * groups + g] = bitcast<u32>(amax / 127.0); }
}
