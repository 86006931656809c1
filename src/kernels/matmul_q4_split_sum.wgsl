// Second pass of a split-K matmul_q4 (SPLIT_K): Y[i] = sum over z of part[z][i] (ACCUMULATE:
// Y[i] += that sum), for the n = tokens x rows outputs. VEC4: four outputs per thread (n counts
// vec4s), for rows a multiple of 4: the pass is a pure stream, wide loads keep it at bandwidth.

struct Params {
  n: u32,       // outputs
  splits: u32,
  _pad0: u32,
  _pad1: u32,
}

#if VEC4
alias Value = vec4<f32>;
#else
alias Value = f32;
#endif
@group(0) @binding(0) var<storage, read> part: array<Value>;
@group(0) @binding(1) var<storage, read_write> y: array<Value>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.y * nwg.x * WG + gid.x;
  if (i >= p.n) { return; }
  var v = Value(0.0);
  for (var z = 0u; z < p.splits; z++) { v += part[z * p.n + i]; }
#if ACCUMULATE
  y[i] = y[i] + v;
#else
  y[i] = v;
#endif
}
