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
enable subgroups;

#include "step.wgsl"
#include "attention_params.wgsl"

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> partials: array<f32>;
@group(0) @binding(4) var<uniform> p: AttentionParams;
@group(0) @binding(5) var<storage, read> steps: array<Step>;

override WG: u32 = 64u;  // threads: WG / 4 quads, one key each at a time
override QUADS: u32 = WG / 4u;
override SG_MIN: u32 = 4u;  // the adapter's smallest subgroup (sizes the merge buffer)
const MASKED = -1.0e30;

#include "reduce.wgsl"

var<workgroup> merged: array<vec4<f32>, WG / SG_MIN * 16u>;  // [subgroup][16 vec4 = 64 dims]

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

  let qbase = (st.seq * p.q_stride + p.q_offset + h * 64u) / 4u + part * 4u;
  var qv: array<vec4<f32>, 4>;
  for (var b = 0u; b < 4u; b++) { qv[b] = q[qbase + b] * p.scale; }

  var m = MASKED;
  var l = 0.0;
  var acc: array<vec4<f32>, 4>;
  // A uniform trip count (the shuffles need every lane); a lane past `end` computes on zeros and
  // keeps its state.
  let rounds = (end - begin + QUADS - 1u) / QUADS;
  for (var i = 0u; i < rounds; i++) {
    let key = begin + i * QUADS + quad;
    let valid = key < end;
    let base = (st.seq * p.seq_stride + (min(key, L - 1u) * p.kv_heads + kvh) * p.row) / 4u + part * 4u;
    var s = dot(qv[0], k_cache[base]) + dot(qv[1], k_cache[base + 1u]) + dot(qv[2], k_cache[base + 2u]) +
            dot(qv[3], k_cache[base + 3u]);
    s += subgroupShuffleXor(s, 1u);
    s += subgroupShuffleXor(s, 2u);
    if (valid) {
      let m_new = max(m, s);
      let corr = exp(m - m_new);
      let pw = exp(s - m_new);
      l = l * corr + pw;
      for (var b = 0u; b < 4u; b++) { acc[b] = acc[b] * corr + pw * v_cache[base + b]; }
      m = m_new;
    }
  }

  // Merge the quads: rescale each to the workgroup's max, sum the accumulators over a subgroup's
  // quads (xor shuffles keep `part`), then over the subgroups.
  let M = workgroup_max(m, li, sg_size);
  let f = exp(m - M);  // a quad without keys has l = 0 and acc = 0: its factor does not matter
  let total_l = workgroup_sum(select(0.0, l * f, part == 0u), li, sg_size);
  for (var b = 0u; b < 4u; b++) { acc[b] *= f; }
  for (var off = 4u; off < sg_size; off <<= 1u) {
    for (var b = 0u; b < 4u; b++) { acc[b] += subgroupShuffleXor(acc[b], off); }
  }
  if (li % sg_size < 4u) {
    for (var b = 0u; b < 4u; b++) { merged[(li / sg_size) * 16u + part * 4u + b] = acc[b]; }
  }
  workgroupBarrier();
  if (li < 16u) {
    var sum = vec4<f32>(0.0);
    for (var g = 0u; g < WG / sg_size; g++) { sum += merged[g * 16u + li]; }
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
