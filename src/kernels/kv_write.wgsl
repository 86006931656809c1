// Appends the k and v of T tokens to the caches at positions step.start .. step.start + T - 1.
// Cache layout: [positions][kv_heads][row], row = head_dim + padding (padding elements per KV row
// are never written). Token t of k starts at k_offset + t * k_stride (likewise v), so k and v may
// be read straight from a fused qkv tensor. Grid (kv_heads * head_dim / WG, T).
#include "step.wgsl"

struct Params {
  kv_heads: u32,
  head_dim: u32,
  row: u32,
  k_stride: u32,
  k_offset: u32,
  v_stride: u32,
  v_offset: u32,
  pad0: u32,
}

@group(0) @binding(0) var<storage, read> k: array<f32>;
@group(0) @binding(1) var<storage, read> v: array<f32>;
@group(0) @binding(2) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(3) var<storage, read_write> v_cache: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
@group(0) @binding(5) var<storage, read> step: Step;

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let e = wg.x * WG + li;
  if (e >= p.kv_heads * p.head_dim) { return; }
  let t = wg.y;
  let head = e / p.head_dim;
  let i = e % p.head_dim;
  let dst = ((step.start + t) * p.kv_heads + head) * p.row + i;
  k_cache[dst] = k[p.k_offset + t * p.k_stride + e];
  v_cache[dst] = v[p.v_offset + t * p.v_stride + e];
}
