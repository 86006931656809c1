#if SUBGROUPS
enable subgroups;
#endif
// Per-head RMS norm of q and k in place (TRELLIS MultiHeadRMSNorm):
//   v = v / max(||v||_2, 1e-12) * 8 * gamma[head]   for each 64-vector.
// Rows hold q at q_offset and k at k_offset (floats, multiples of 4) with `stride` floats per row;
// gammas are f16 [heads][64].
// SUBGROUPS: 8 adjacent invocations per 64-vector, vec4 i and i + 8 each, the squares summed with
// shuffles (needs subgroups of at least 8 lanes); a row's q heads, then its k heads, so a subgroup
// reads contiguous memory. Otherwise one invocation per (row, head, q|k).
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

// gamma[head][4i .. 4i+3] of q or k.
fn gamma4(is_k: bool, head: u32, i: u32) -> vec4<f32> {
  let g0 = 32u * head + 2u * i;  // word index of gamma[head][4i]
  if (is_k) { return vec4<f32>(unpack2x16float(gamma_k[g0]), unpack2x16float(gamma_k[g0 + 1u])); }
  return vec4<f32>(unpack2x16float(gamma_q[g0]), unpack2x16float(gamma_q[g0 + 1u]));
}

#if SUBGROUPS
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = gid.x + gid.y * nwg.x * WG;
  let i = id % 8u;
  let vec = id / 8u;  // (row, q heads then k heads)
  let valid = vec < p.rows * p.heads * 2u;
  let j = vec % (2u * p.heads);
  let is_k = j >= p.heads;
  let head = j % p.heads;
  let at = ((vec / (2u * p.heads)) * p.stride + select(p.q_offset, p.k_offset, is_k) + head * 64u) / 4u + i;
  var v0 = vec4<f32>(0.0);
  var v1 = vec4<f32>(0.0);
  if (valid) {
    v0 = x[at];
    v1 = x[at + 8u];
  }
  var ss = dot(v0, v0) + dot(v1, v1);
  ss += subgroupShuffleXor(ss, 1u);
  ss += subgroupShuffleXor(ss, 2u);
  ss += subgroupShuffleXor(ss, 4u);
  let inv = 8.0 / max(sqrt(ss), 1e-12);
  if (valid) {
    x[at] = v0 * inv * gamma4(is_k, head, i);
    x[at + 8u] = v1 * inv * gamma4(is_k, head, i + 8u);
  }
}
#else
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = gid.x + gid.y * nwg.x * WG;
  if (id >= p.rows * p.heads * 2u) { return; }
  let is_k = id % 2u == 1u;
  let head = (id / 2u) % p.heads;
  let row = id / (2u * p.heads);
  let base = (row * p.stride + select(p.q_offset, p.k_offset, is_k) + head * 64u) / 4u;
  var ss = 0.0;
  for (var i = 0u; i < 16u; i++) {
    let v = x[base + i];
    ss += dot(v, v);
  }
  let inv = 8.0 / max(sqrt(ss), 1e-12);
  for (var i = 0u; i < 16u; i++) { x[base + i] = x[base + i] * inv * gamma4(is_k, head, i); }
}
#endif
