// Rotate-half RoPE in place on q [T][heads][d] and k [T][kv_heads][d] at positions step.start + t,
// from tables cos/sin [positions][d/2]: for i < d/2,
//   x'[i] = x[i] c - x[i + d/2] s,   x'[i + d/2] = x[i + d/2] c + x[i] s.
// Token t of q starts at q_offset + t * q_stride (likewise k), so q and k may live inside one fused
// qkv tensor. WebGPU forbids binding one buffer twice as writable, so SHARED_QK binds a single
// buffer `q` that holds both (k addressed through k_offset/k_stride in it). One invocation per
// rotated pair; grid (pairs / WG, T).
#include "step.wgsl"

struct Params {
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  q_stride: u32,
  q_offset: u32,
  k_stride: u32,
  k_offset: u32,
  pad0: u32,
}

@group(0) @binding(0) var<storage, read_write> q: array<f32>;
#if SHARED_QK
@group(0) @binding(1) var<storage, read> cos_table: array<f32>;
@group(0) @binding(2) var<storage, read> sin_table: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
@group(0) @binding(4) var<storage, read> step: Step;

fn rotate_k(base: u32, half: u32, c: f32, s: f32) {
  let a = q[base];
  let b = q[base + half];
  q[base] = a * c - b * s;
  q[base + half] = b * c + a * s;
}
#else
@group(0) @binding(1) var<storage, read_write> k: array<f32>;
@group(0) @binding(2) var<storage, read> cos_table: array<f32>;
@group(0) @binding(3) var<storage, read> sin_table: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;
@group(0) @binding(5) var<storage, read> step: Step;

fn rotate_k(base: u32, half: u32, c: f32, s: f32) {
  let a = k[base];
  let b = k[base + half];
  k[base] = a * c - b * s;
  k[base + half] = b * c + a * s;
}
#endif

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let half = p.head_dim / 2u;
  let pair = wg.x * WG + li;
  if (pair >= (p.heads + p.kv_heads) * half) { return; }
  let t = wg.y;
  let head = pair / half;
  let i = pair % half;
  let table = (step.start + t) * half + i;
  let c = cos_table[table];
  let s = sin_table[table];
  if (head < p.heads) {
    let base = p.q_offset + t * p.q_stride + head * p.head_dim + i;
    let a = q[base];
    let b = q[base + half];
    q[base] = a * c - b * s;
    q[base + half] = b * c + a * s;
  } else {
    let base = p.k_offset + t * p.k_stride + (head - p.heads) * p.head_dim + i;
    rotate_k(base, half, c, s);
  }
}
