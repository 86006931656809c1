// x[c] += sum_i partials[i][c] for i < count: folds per-workgroup partial vectors (the fused
// MLP's slices) into a residual stream, in a fixed order so results are deterministic.

struct Params {
  width: u32,  // elements per vector
  count: u32,  // partial vectors
  pad0: u32,
  pad1: u32,
}

@group(0) @binding(0) var<storage, read> partials: array<f32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  if (c >= p.width) { return; }
  var s = 0.0;
  for (var i = 0u; i < p.count; i++) { s += partials[i * p.width + c]; }
  x[c] += s;
}
