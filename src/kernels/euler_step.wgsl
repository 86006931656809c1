// One guided Euler step of the flow sampler, in place on the latent x (n floats):
//   v = guided ? (1 + s) * vel[i] - s * vel[n + i] : vel[i];   x[i] -= dt * v;   vel[i] = v
// vel holds the conditional velocity, then (when guided) the unconditional one; afterwards its
// first n floats hold the velocity after guidance (what `ss-flow --dump-velocity` records).
struct Params {
  n: u32,
  guided: u32,
  dt: f32,
  strength: f32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> vel: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= p.n) { return; }
  var v = vel[i];
  if (p.guided != 0u) { v = (1.0 + p.strength) * v - p.strength * vel[p.n + i]; }
  x[i] = x[i] - p.dt * v;
  vel[i] = v;
}
