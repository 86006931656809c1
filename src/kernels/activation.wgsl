// In-place elementwise activation: y[i] = f(y[i]) for i < n. SILU or GELU (tanh approximation).
struct Params {
  n: u32,
}

@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;

override WG: u32 = 256u;

#include "activation_fns.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= p.n) { return; }
#if SILU
  y[i] = silu(y[i]);
#else
  y[i] = gelu_tanh(y[i]);
#endif
}
