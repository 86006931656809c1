// The attention input step in one dispatch, for T tokens of a fused qkv tensor: per-head RMSNorm
// of q and k (one shared [head_dim] weight each), rotate-half RoPE of both at positions
// step.start + t, and the append of k and v to the KV caches. The same as rmsnorm.wgsl (heads
// mode) + rope.wgsl + kv_write.wgsl in sequence.
//
// Grid (heads + 2 * kv_heads, T): workgroup h < heads is q head h, then the k heads (normed,
// rotated, written back in place and into k_cache), then the v heads (copied into v_cache).
// Token t's q head h starts at t * stride + q_offset + h * head_dim (k, v: k_offset, v_offset).
// Caches: [positions][kv_heads][row], row = head_dim + padding (padding never written).
// Several sequences (batched decode, T = 1): grid z walks the entries of steps; sequence seq's
// token is row seq of qkv and its caches start at seq * cache_stride.
#if SUBGROUPS
enable subgroups;
#endif
#include "step.wgsl"

struct Params {
  heads: u32,
  kv_heads: u32,
  head_dim: u32,
  row: u32,
  stride: u32,
  q_offset: u32,
  k_offset: u32,
  v_offset: u32,
  eps: f32,
  cache_stride: u32,  // elements between two sequences' caches
  pad0: u32,
  pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(1) var<storage, read> q_norm_w: array<f32>;
@group(0) @binding(2) var<storage, read> k_norm_w: array<f32>;
@group(0) @binding(3) var<storage, read> cos_table: array<f32>;
@group(0) @binding(4) var<storage, read> sin_table: array<f32>;
@group(0) @binding(5) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(6) var<storage, read_write> v_cache: array<f32>;
@group(0) @binding(7) var<uniform> p: Params;
@group(0) @binding(8) var<storage, read> steps: array<Step>;

override WG: u32 = 64u;  // power of two (the shared-memory tree halves it)

#include "reduce.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32,
#if SUBGROUPS
        @builtin(subgroup_size) sg_size: u32
#endif
        ) {
#if !SUBGROUPS
  let sg_size = 1u;
#endif
  let d = p.head_dim;
  let st = steps[wg.z];
  let t = st.seq + wg.y;  // the token's row of qkv
  let pos = st.start + wg.y;
  let cache = st.seq * p.cache_stride;
  let h = wg.x;  // uniform across the workgroup: every branch on it keeps barriers uniform
  if (h >= p.heads + p.kv_heads) {
    let vh = h - p.heads - p.kv_heads;
    let src = t * p.stride + p.v_offset + vh * d;
    let dst = cache + (pos * p.kv_heads + vh) * p.row;
    for (var i = li; i < d; i += WG) { v_cache[dst + i] = qkv[src + i]; }
    return;
  }
  let is_q = h < p.heads;
  let kh = h - select(p.heads, 0u, is_q);  // k head index (unused for q)
  let src = t * p.stride + select(p.k_offset + kh * d, p.q_offset + h * d, is_q);

  var ss = 0.0;
  for (var i = li; i < d; i += WG) {
    let v = qkv[src + i];
    ss += v * v;
  }
  // Every read above happens before the barriers inside workgroup_sum, every write below after.
  let scale = inverseSqrt(workgroup_sum(ss, li, sg_size) / f32(d) + p.eps);

  let half = d / 2u;
  let dst = cache + (pos * p.kv_heads + kh) * p.row;
  for (var i = li; i < half; i += WG) {
    var wa = k_norm_w[i];
    var wb = k_norm_w[i + half];
    if (is_q) {
      wa = q_norm_w[i];
      wb = q_norm_w[i + half];
    }
    let a = qkv[src + i] * scale * wa;
    let b = qkv[src + i + half] * scale * wb;
    let c = cos_table[pos * half + i];
    let s = sin_table[pos * half + i];
    let ra = a * c - b * s;
    let rb = b * c + a * s;
    qkv[src + i] = ra;
    qkv[src + i + half] = rb;
    if (!is_q) {
      k_cache[dst + i] = ra;
      k_cache[dst + i + half] = rb;
    }
  }
}
