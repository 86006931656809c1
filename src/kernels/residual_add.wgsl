// x[t][i] += y[t][i] for [T][cols] tensors. Grid (cols / WG, T).
struct Params {
  cols: u32,
  pad0: u32,
  pad1: u32,
  pad2: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= p.cols) { return; }
  let e = gid.y * p.cols + gid.x;
  x[e] += y[e];
}
