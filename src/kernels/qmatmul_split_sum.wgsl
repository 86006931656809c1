// Second pass of a split-K qmatmul (qmatmul.wgsl with SPLIT_K): y[t][r] = epilogue(sum over z of
// part[z][t][r]); the bias is already in part[0]. Same Params and epilogue defines as qmatmul.
#include "qmatmul_params.wgsl"

@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
#if GATE
@group(0) @binding(3) var<storage, read> gate: array<f32>;
#endif
#if ADD_ROWS
@group(0) @binding(3) var<storage, read> add: array<f32>;
#endif

override WG: u32 = 256u;

#include "activation_fns.wgsl"
#include "qmatmul_epilogue.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = gid.y * nwg.x * WG + gid.x;
  let n = p.tokens * p.rows;
  if (idx >= n) { return; }
  let splits = (p.padded_cols + p.k_chunk - 1u) / p.k_chunk;
  var v = 0.0;
  for (var z = 0u; z < splits; z++) { v += part[z * n + idx]; }
  store_output(idx / p.rows, idx % p.rows, v);
}
