// 3D pixel shuffle by 2 on channels-last f32 volumes: x [D][H][W][C*8] -> y [2D][2H][2W][C] with
//   y[2z + a][2y + b][2x + e][c] = x[z][y][x][c*8 + 4a + 2b + e]
// (the channel order of a [C][2][2][2] reshape). One invocation per output element.
struct Params {
  d: u32,
  h: u32,
  w: u32,
  c: u32,  // output channels
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

override WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * WG;
  let W2 = 2u * p.w;
  let H2 = 2u * p.h;
  if (i >= 8u * p.d * p.h * p.w * p.c) { return; }
  let c = i % p.c;
  let ox = (i / p.c) % W2;
  let oy = (i / (p.c * W2)) % H2;
  let oz = i / (p.c * W2 * H2);
  let sub = (oz % 2u) * 4u + (oy % 2u) * 2u + (ox % 2u);
  y[i] = x[(((oz / 2u) * p.h + oy / 2u) * p.w + ox / 2u) * (8u * p.c) + c * 8u + sub];
}
