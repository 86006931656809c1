// Per-head RMS norm of q and k in place (TRELLIS MultiHeadRMSNorm):
//   v = v / max(||v||_2, 1e-12) * 8 * gamma[head]   for each 64-vector.
// One invocation per (row, head, q|k). Rows hold q at q_offset and k at k_offset (floats, multiples
// of 4) with `stride` floats per row; gammas are f16 [heads][64].
struct Params {
  rows: u32,
  heads: u32,
  stride: u32,
  q_offset: u32,
  k_offset: u32,
  _p0: u32,
  _p1: u32,
  _p2: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> gamma_q: array<u32>;
@group(0) @binding(2) var<storage, read> gamma_k: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = gid.x + gid.y * nwg.x * WG;
  if (id >= p.rows * p.heads * 2u) { return; }
  let is_k = id % 2u;
  let head = (id / 2u) % p.heads;
  let row = id / (2u * p.heads);
  let base = (row * p.stride + select(p.q_offset, p.k_offset, is_k == 1u) + head * 64u) / 4u;
  var ss = 0.0;
  for (var i = 0u; i < 16u; i++) {
    let v = x[base + i];
    ss += dot(v, v);
  }
  let inv = 8.0 / max(sqrt(ss), 1e-12);
  for (var i = 0u; i < 16u; i++) {
    let g0 = 32u * head + 2u * i;  // word index of gamma[head][4i]
    var g: vec4<f32>;
    if (is_k == 1u) {
      g = vec4<f32>(unpack2x16float(gamma_k[g0]), unpack2x16float(gamma_k[g0 + 1u]));
    } else {
      g = vec4<f32>(unpack2x16float(gamma_q[g0]), unpack2x16float(gamma_q[g0 + 1u]));
    }
    x[base + i] = x[base + i] * inv * g;
  }
}
