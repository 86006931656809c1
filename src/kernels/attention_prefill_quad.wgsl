enable subgroups;
// Causal GQA prefill attention for head size 64: the contract of attention_prefill.wgsl, register-
// tiled like flash_attention_quad.wgsl. A quad of 4 adjacent lanes owns 4 consecutive queries;
// lane `part` holds dims [16 part, 16 part + 16) of their scaled q and output accumulators, so each
// key's 4 vec4 read from workgroup memory feed 4 queries (16 FMAs per load instead of 4), and the
// quad's partial scores are summed with two rounds of xor shuffles (bit-identical on all 4 lanes).
// Workgroups run the longest query blocks (the last ones) first, so the causal tail is short.
// Needs subgroups of a multiple of 4 lanes over local_invocation_index and 16-byte aligned rows
// (the C++ side checks row, q_stride and q_offset are multiples of 4).
#include "step.wgsl"
#include "attention_params.wgsl"

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> p: AttentionParams;
@group(0) @binding(5) var<storage, read> step: Step;

override BQ: u32 = 64u;  // queries per workgroup = threads (multiple of 4)
override BK: u32 = 32u;  // keys per workgroup-memory tile (multiple of SUB)
const SUB: u32 = 8u;     // keys per online-softmax update
const MASKED: f32 = -3.0e38;

var<workgroup> k_tile: array<vec4<f32>, BK * 16u>;
var<workgroup> v_tile: array<vec4<f32>, BK * 16u>;

@compute @workgroup_size(BQ)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let T = step.rows;
  let h = wg.y;
  let kvh = h / (p.heads / p.kv_heads);
  let q0 = (groups.x - 1u - wg.x) * BQ;
  let kv_end = step.start + min(T, q0 + BQ);  // one past the last key any query here sees
  let part = li % 4u;
  let qa = q0 + (li / 4u) * 4u;  // the quad's first query; rows past T repeat row T - 1, unwritten

  var qr: array<vec4<f32>, 16>;  // qr[4a + b]: query qa + a, dims 16 part + 4b .. +3
  var acc: array<vec4<f32>, 16>;
  var last = vec4<u32>(0u);      // the last key each of the 4 queries sees
  for (var a = 0u; a < 4u; a++) {
    let t = min(qa + a, T - 1u);
    last[a] = step.start + t;
    let base = (p.q_offset + t * p.q_stride + h * 64u) / 4u + part * 4u;
    for (var b = 0u; b < 4u; b++) {
      qr[4u * a + b] = q[base + b] * p.scale;
      acc[4u * a + b] = vec4<f32>(0.0);
    }
  }
  var m = vec4<f32>(MASKED);
  var l = vec4<f32>(0.0);

  for (var k0 = 0u; k0 < kv_end; k0 += BK) {
    for (var idx = li; idx < BK * 16u; idx += BQ) {
      let key = k0 + idx / 16u;
      var kvec = vec4<f32>(0.0);
      var vvec = vec4<f32>(0.0);
      if (key < kv_end) {
        let src = (key * p.kv_heads + kvh) * p.row / 4u + idx % 16u;
        kvec = k_cache[src];
        vvec = v_cache[src];
      }
      k_tile[idx] = kvec;
      v_tile[idx] = vvec;
    }
    workgroupBarrier();
    // Key 0 is in the first SUB group and visible to every query, so m is finite after it and
    // exp(MASKED - m) is exactly 0 for masked keys from then on. The loop bound is uniform.
    for (var j0 = 0u; j0 < BK && k0 + j0 < kv_end; j0 += SUB) {
      var s: array<vec4<f32>, 8>;  // SUB: s[j][a] = score of query qa + a with key k0 + j0 + j
      for (var j = 0u; j < SUB; j++) {
        let kb = (j0 + j) * 16u + part * 4u;
        let k_0 = k_tile[kb];
        let k_1 = k_tile[kb + 1u];
        let k_2 = k_tile[kb + 2u];
        let k_3 = k_tile[kb + 3u];
        let part_dot = vec4<f32>(
            dot(qr[0], k_0) + dot(qr[1], k_1) + dot(qr[2], k_2) + dot(qr[3], k_3),
            dot(qr[4], k_0) + dot(qr[5], k_1) + dot(qr[6], k_2) + dot(qr[7], k_3),
            dot(qr[8], k_0) + dot(qr[9], k_1) + dot(qr[10], k_2) + dot(qr[11], k_3),
            dot(qr[12], k_0) + dot(qr[13], k_1) + dot(qr[14], k_2) + dot(qr[15], k_3));
        // MASKED / 4 per lane: the quad sum stays finite.
        s[j] = select(part_dot, vec4<f32>(MASKED / 4.0), vec4<u32>(k0 + j0 + j) > last);
      }
      // Written out: the 8 shuffles of a round are independent, so their latencies overlap.
      s[0] += subgroupShuffleXor(s[0], 1u);
      s[1] += subgroupShuffleXor(s[1], 1u);
      s[2] += subgroupShuffleXor(s[2], 1u);
      s[3] += subgroupShuffleXor(s[3], 1u);
      s[4] += subgroupShuffleXor(s[4], 1u);
      s[5] += subgroupShuffleXor(s[5], 1u);
      s[6] += subgroupShuffleXor(s[6], 1u);
      s[7] += subgroupShuffleXor(s[7], 1u);
      s[0] += subgroupShuffleXor(s[0], 2u);
      s[1] += subgroupShuffleXor(s[1], 2u);
      s[2] += subgroupShuffleXor(s[2], 2u);
      s[3] += subgroupShuffleXor(s[3], 2u);
      s[4] += subgroupShuffleXor(s[4], 2u);
      s[5] += subgroupShuffleXor(s[5], 2u);
      s[6] += subgroupShuffleXor(s[6], 2u);
      s[7] += subgroupShuffleXor(s[7], 2u);
      var mx = m;
      for (var j = 0u; j < SUB; j++) { mx = max(mx, s[j]); }
      let corr = exp(m - mx);
      l *= corr;
      for (var b = 0u; b < 4u; b++) {
        acc[b] *= corr.x;
        acc[4u + b] *= corr.y;
        acc[8u + b] *= corr.z;
        acc[12u + b] *= corr.w;
      }
      for (var j = 0u; j < SUB; j++) {
        let pj = exp(s[j] - mx);
        l += pj;
        let vb = (j0 + j) * 16u + part * 4u;
        for (var b = 0u; b < 4u; b++) {
          let v = v_tile[vb + b];
          acc[b] = fma(vec4<f32>(pj.x), v, acc[b]);
          acc[4u + b] = fma(vec4<f32>(pj.y), v, acc[4u + b]);
          acc[8u + b] = fma(vec4<f32>(pj.z), v, acc[8u + b]);
          acc[12u + b] = fma(vec4<f32>(pj.w), v, acc[12u + b]);
        }
      }
      m = mx;
    }
    workgroupBarrier();
  }

  let inv = 1.0 / l;
  for (var a = 0u; a < 4u; a++) {
    let t = qa + a;
    if (t < T) {
      let base = (t * p.heads + h) * 16u + part * 4u;
      for (var b = 0u; b < 4u; b++) { out[base + b] = acc[4u * a + b] * inv[a]; }
    }
  }
}
