// Flash-decoding, stage 1, for head size 64: the contract, grid, partials layout and DIRECT mode
// of attention_decode.wgsl, organised for latency. A quad of 4 lanes owns one key at a time, lane
// `part` holding dims [16 part, 16 part + 16) of q in registers, so the quad reads a key's
// 256-byte row in one coalesced piece and sums its score with two xor shuffles; each quad keeps
// its own online softmax over keys begin + quad, + QUADS, ... (a short serial chain: chunk /
// QUADS keys); at the end the quads of a subgroup merge by shuffles and the subgroups through
// workgroup memory. WG up to 1024 lets one workgroup per head (DIRECT) cover a long context
// with the same short chain and no combine dispatch. Needs subgroups of a
// multiple of 4 lanes laid out over local_invocation_index, and 16-byte aligned rows (the C++
// side checks row, q_stride, q_offset and seq_stride are multiples of 4).
//
// NORM_ROPE_KV: q is the token's raw fused qkv row (q at q_offset, k at k_offset, v at v_offset):
// every quad applies the per-head RMSNorm and rotate-half RoPE to its q head and to the fresh k
// in registers (qk_norm_rope_kv.wgsl's math), uses the fresh k/v for the current position instead
// of the cache, and the one workgroup per kv head that owns that position appends k/v to the
// caches. No workgroup of the dispatch reads the cache row being written.
enable subgroups;

#include "step.wgsl"
#include "attention_params.wgsl"

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;
#if NORM_ROPE_KV
@group(0) @binding(1) var<storage, read_write> k_cache: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> v_cache: array<vec4<f32>>;
#else
@group(0) @binding(1) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v_cache: array<vec4<f32>>;
#endif
@group(0) @binding(3) var<storage, read_write> partials: array<f32>;
@group(0) @binding(4) var<uniform> p: AttentionParams;
@group(0) @binding(5) var<storage, read> steps: array<Step>;
#if NORM_ROPE_KV
@group(0) @binding(6) var<storage, read> q_norm_w: array<vec4<f32>>;  // [64]
@group(0) @binding(7) var<storage, read> k_norm_w: array<vec4<f32>>;  // [64]
@group(0) @binding(8) var<storage, read> cos_table: array<vec4<f32>>; // [positions][32]
@group(0) @binding(9) var<storage, read> sin_table: array<vec4<f32>>;
#endif

override WG: u32 = 64u;  // threads: WG / 4 quads, one key each at a time
override QUADS: u32 = WG / 4u;
override SG_MIN: u32 = 4u;  // the adapter's smallest subgroup (sizes the merge buffer)
const MASKED = -1.0e30;

var<workgroup> merged: array<vec4<f32>, WG / SG_MIN * 16u>;  // [subgroup][16 vec4 = 64 dims]
var<workgroup> merged_stats: array<vec2<f32>, WG / SG_MIN>;  // [subgroup] (max, sum of exp)

#if NORM_ROPE_KV
// One head's RMSNorm (weight w) and RoPE (c, s: cos and sin of its angles), spread over a quad:
// lane `part` holds dims [16 part, 16 part + 16) in x and w, angles 16 (part & 1) .. + 15 in c, s.
// Dim i < 32 pairs with i + 32, which lane part ^ 2 holds. Called in uniform control flow (quad
// shuffles); pure arithmetic, so every load it needs was issued up front.
fn norm_rope(x: array<vec4<f32>, 4>, w: array<vec4<f32>, 4>, c: array<vec4<f32>, 4>, s: array<vec4<f32>, 4>,
             part: u32) -> array<vec4<f32>, 4> {
  var ss = 0.0;
  for (var b = 0u; b < 4u; b++) { ss += dot(x[b], x[b]); }
  ss += subgroupShuffleXor(ss, 1u);
  ss += subgroupShuffleXor(ss, 2u);
  let r = inverseSqrt(ss / 64.0 + p.eps);
  let sign = select(-1.0, 1.0, part >= 2u);
  var out: array<vec4<f32>, 4>;
  for (var b = 0u; b < 4u; b++) {
    let y = x[b] * r * w[b];
    let partner = subgroupShuffleXor(y, 2u);
    out[b] = y * c[b] + sign * partner * s[b];
  }
  return out;
}
#endif

struct KvRows {
  k: array<vec4<f32>, 4>,
  v: array<vec4<f32>, 4>,
}

// This lane's 16 dims of key `key`'s K and V rows, clamped to the last cached row; zeros when no
// row is cached (the uniform `cached` is 0 only for the first token under NORM_ROPE_KV).
fn load_kv(seq_base: u32, kvh: u32, key: u32, cached: u32) -> KvRows {
  var r: KvRows;
  if (cached > 0u) {
    let base = seq_base + (min(key, cached - 1u) * p.kv_heads + kvh) * p.row / 4u;
    for (var b = 0u; b < 4u; b++) {
      r.k[b] = k_cache[base + b];
      r.v[b] = v_cache[base + b];
    }
  }
  return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32,
        @builtin(subgroup_size) sg_size: u32) {
  let h = wg.y;
  let blocks = groups.x;
  let kvh = h / (p.heads / p.kv_heads);
  let st = steps[wg.z];
  let L = st.start + 1u;
  let chunk = (L + blocks - 1u) / blocks;
  let begin = min(L, wg.x * chunk);
  let end = min(L, begin + chunk);
  let part = li % 4u;
  let quad = li / 4u;

  // Keys below `cached` come from the cache (NORM_ROPE_KV: the current position is fresh).
#if NORM_ROPE_KV
  let cached = st.start;
#else
  let cached = L;
#endif
  let seq_base = st.seq * p.seq_stride / 4u + part * 4u;
#if DIRECT
  // One workgroup per head: its first round's rows are loaded before anything else, so that their
  // latency overlaps the q loads, the norms and the append (which writes only row `cached`, never
  // read here). With many blocks the rows held across the norms cost more occupancy than the
  // latency they hide (measured: faster with one block, slower with many).
  var next = load_kv(seq_base, kvh, begin + quad, cached);
#endif

  let qbase = (st.seq * p.q_stride + p.q_offset + h * 64u) / 4u + part * 4u;
  var qv: array<vec4<f32>, 4>;
#if NORM_ROPE_KV
  let pos = st.start;  // this token: its k/v come from qkv, not the cache
  let kbase = (st.seq * p.q_stride + p.k_offset + kvh * 64u) / 4u + part * 4u;
  let vbase = (st.seq * p.q_stride + p.v_offset + kvh * 64u) / 4u + part * 4u;
  let angle = pos * 8u + (part & 1u) * 4u;  // vec4 index of angle 16 (part & 1) at pos
  var kraw: array<vec4<f32>, 4>;
  var vf: array<vec4<f32>, 4>;
  var qw: array<vec4<f32>, 4>;
  var kw: array<vec4<f32>, 4>;
  var rc: array<vec4<f32>, 4>;  // cos and sin of this lane's angles
  var rs: array<vec4<f32>, 4>;
  for (var b = 0u; b < 4u; b++) {
    qv[b] = q[qbase + b];
    kraw[b] = q[kbase + b];
    vf[b] = q[vbase + b];
    qw[b] = q_norm_w[part * 4u + b];
    kw[b] = k_norm_w[part * 4u + b];
    rc[b] = cos_table[angle + b];
    rs[b] = sin_table[angle + b];
  }
  qv = norm_rope(qv, qw, rc, rs, part);
  let kf = norm_rope(kraw, kw, rc, rs, part);
  for (var b = 0u; b < 4u; b++) { qv[b] *= p.scale; }
  // The workgroup whose keys hold `pos`, for the first q head of its kv head, appends k/v.
  if (pos >= begin && pos < end && h % (p.heads / p.kv_heads) == 0u && li < 4u) {
    let dst = (st.seq * p.seq_stride + (pos * p.kv_heads + kvh) * p.row) / 4u + part * 4u;
    for (var b = 0u; b < 4u; b++) {
      k_cache[dst + b] = kf[b];
      v_cache[dst + b] = vf[b];
    }
  }
#else
  for (var b = 0u; b < 4u; b++) { qv[b] = q[qbase + b] * p.scale; }
#endif

#if !DIRECT
  var next = load_kv(seq_base, kvh, begin + quad, cached);
#endif
  var m = MASKED;
  var l = 0.0;
  var acc: array<vec4<f32>, 4>;
  // A uniform trip count (the shuffles need every lane); a lane past `end` computes on a clamped
  // row and keeps its state. Each round's K and V rows are loaded together one round ahead, so a
  // round waits on no memory once the first has arrived.
  let rounds = (end - begin + QUADS - 1u) / QUADS;
  for (var i = 0u; i < rounds; i++) {
    let cur = next;
    if (i + 1u < rounds) { next = load_kv(seq_base, kvh, begin + (i + 1u) * QUADS + quad, cached); }
    let key = begin + i * QUADS + quad;
    let valid = key < end;
#if NORM_ROPE_KV
    let fresh = key >= pos;  // the current token (or a lane past the end, whose score is dropped)
    var kk = cur.k;
    var vv = cur.v;
    if (fresh) {
      kk = kf;
      vv = vf;
    }
#else
    let kk = cur.k;
    let vv = cur.v;
#endif
    var s = dot(qv[0], kk[0]) + dot(qv[1], kk[1]) + dot(qv[2], kk[2]) + dot(qv[3], kk[3]);
    s += subgroupShuffleXor(s, 1u);
    s += subgroupShuffleXor(s, 2u);
    if (valid) {
      let m_new = max(m, s);
      let corr = exp(m - m_new);
      let pw = exp(s - m_new);
      l = l * corr + pw;
      for (var b = 0u; b < 4u; b++) { acc[b] = acc[b] * corr + pw * vv[b]; }
      m = m_new;
    }
  }

  // Merge the quads in one barrier: each subgroup rescales its quads to the subgroup's max and
  // sums them by xor shuffles (which keep `part`); its first quad writes the subgroup's max, sum
  // and 64 dims to workgroup memory; then 16 lanes rescale and sum the subgroups. (A workgroup-wide
  // max, then sum, then merge took five barriers.) A quad without keys has m = MASKED, l = 0 and
  // acc = 0: its factor does not matter.
  let m_sg = subgroupMax(m);
  let f = exp(m - m_sg);
  let l_sg = subgroupAdd(select(0.0, l * f, part == 0u));
  for (var b = 0u; b < 4u; b++) { acc[b] *= f; }
  for (var off = 4u; off < sg_size; off <<= 1u) {
    for (var b = 0u; b < 4u; b++) { acc[b] += subgroupShuffleXor(acc[b], off); }
  }
  let g = li / sg_size;
  if (li % sg_size < 4u) {
    for (var b = 0u; b < 4u; b++) { merged[g * 16u + part * 4u + b] = acc[b]; }
  }
  if (li % sg_size == 0u) { merged_stats[g] = vec2<f32>(m_sg, l_sg); }
  workgroupBarrier();
  if (li < 16u) {
    let subgroups = WG / sg_size;
    var M = MASKED;
    for (var i = 0u; i < subgroups; i++) { M = max(M, merged_stats[i].x); }
    var sum = vec4<f32>(0.0);
    var total_l = 0.0;
    for (var i = 0u; i < subgroups; i++) {
      let w = exp(merged_stats[i].x - M);
      sum += w * merged[i * 16u + li];
      total_l += w * merged_stats[i].y;
    }
#if DIRECT
    let o = (st.seq * p.heads + h) * 64u + li * 4u;
    let r = sum / total_l;
    partials[o] = r.x;
    partials[o + 1u] = r.y;
    partials[o + 2u] = r.z;
    partials[o + 3u] = r.w;
#else
    let o = ((st.seq * p.heads + h) * blocks + wg.x) * 66u;
    if (li == 0u) {
      partials[o] = M;
      partials[o + 1u] = total_l;
    }
    partials[o + 2u + li * 4u] = sum.x;
    partials[o + 3u + li * 4u] = sum.y;
    partials[o + 4u + li * 4u] = sum.z;
    partials[o + 5u + li * 4u] = sum.w;
#endif
  }
}
