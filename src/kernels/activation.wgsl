// In-place elementwise activation: y[i] = f(y[i]) for i < n. SILU, QUICK_GELU or GELU (tanh
// approximation).
// VEC4: n is a multiple of 4 and each invocation takes 4 (fewer, wider memory transactions).
struct Params {
  n: u32,
}

#if VEC4
@group(0) @binding(0) var<storage, read_write> y: array<vec4<f32>>;
#else
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
#endif
@group(0) @binding(1) var<uniform> p: Params;

override WG: u32 = 256u;

#include "activation_fns.wgsl"

fn act(x: f32) -> f32 {
#if SILU
  return silu(x);
#else
#if QUICK_GELU
  return quick_gelu(x);
#else
  return gelu_tanh(x);
#endif
#endif
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
#if VEC4
  if (i >= p.n / 4u) { return; }
  let v = y[i];
  y[i] = vec4<f32>(act(v.x), act(v.y), act(v.z), act(v.w));
#else
  if (i >= p.n) { return; }
  y[i] = act(y[i]);
#endif
}
