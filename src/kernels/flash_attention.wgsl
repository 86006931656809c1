// Multi-head attention with head size 64, softmax(scale * q k^T) v, as flash attention: each
// thread owns one query (q and its output accumulator in registers), the workgroup streams BK keys
// and values at a time through workgroup memory and keeps an online softmax, so the nq x nk scores
// never exist. No mask, or with CAUSAL query i sees keys 0..i (nq == nk). Dispatch (ceil(nq / BQ),
// heads, batch).
// Layout (floats; strides and offsets multiples of 4): query i of batch b, head h at
//   q[(b*nq + i) * q_stride + q_offset + 64h], key j at kv[(b*nk + j) * kv_stride + k_offset + 64h],
//   value j at kv[... + v_offset + 64h]; output o[(b*nq + i) * o_stride + 64h].
#include "flash_attention_params.wgsl"

override BQ: u32 = 64u;  // queries (threads) per workgroup
const BK: u32 = 32u;     // keys per tile (the score registers of a thread)
const NEG_BIG: f32 = -3.0e38;

var<workgroup> ktile: array<vec4<f32>, 512>;  // BK * 16
var<workgroup> vtile: array<vec4<f32>, 512>;

@compute @workgroup_size(BQ)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let head = wg.y;
  let batch = wg.z;
  let i = wg.x * BQ + li;
  let valid = i < p.nq;
  var qr: array<vec4<f32>, 16>;
  var acc: array<vec4<f32>, 16>;
  let qbase = ((batch * p.nq + min(i, p.nq - 1u)) * p.q_stride + p.q_offset + head * 64u) / 4u;
  for (var d = 0u; d < 16u; d++) {
    qr[d] = q[qbase + d] * p.scale;
    acc[d] = vec4<f32>(0.0);
  }
  var m = NEG_BIG;
  var l = 0.0;
  for (var k0 = 0u; k0 < p.nk; k0 += BK) {
    for (var idx = li; idx < BK * 16u; idx += BQ) {
      let j = k0 + idx / 16u;
      let d = idx % 16u;
      var kvec = vec4<f32>(0.0);
      var vvec = vec4<f32>(0.0);
      if (j < p.nk) {
        let row = (batch * p.nk + j) * p.kv_stride + head * 64u;
        kvec = kv[(row + p.k_offset) / 4u + d];
        vvec = kv[(row + p.v_offset) / 4u + d];
      }
      ktile[idx] = kvec;
      vtile[idx] = vvec;
    }
    workgroupBarrier();
    // Scores four keys to a vec4 (lavapipe's compiler takes minutes over 32 scalars in an array).
    var s: array<vec4<f32>, 8>;  // BK / 4
    var tile_max = NEG_BIG;
    for (var j4 = 0u; j4 < BK / 4u; j4++) {
      var sv: vec4<f32>;
      for (var c = 0u; c < 4u; c++) {
        let j = 4u * j4 + c;
        var dv = vec4<f32>(0.0);
        for (var d = 0u; d < 16u; d++) { dv = fma(qr[d], ktile[j * 16u + d], dv); }
#if CAUSAL
        // Key 0 is always seen, so a query's first tile is never fully masked and m stays finite.
        sv[c] = select(dv.x + dv.y + dv.z + dv.w, NEG_BIG, k0 + j >= p.nk || k0 + j > i);
#else
        sv[c] = select(dv.x + dv.y + dv.z + dv.w, NEG_BIG, k0 + j >= p.nk);
#endif
      }
      s[j4] = sv;
      tile_max = max(tile_max, max(max(sv.x, sv.y), max(sv.z, sv.w)));
    }
    let m_new = max(m, tile_max);
    let corr = exp(m - m_new);
    l *= corr;
    for (var d = 0u; d < 16u; d++) { acc[d] *= corr; }
    for (var j4 = 0u; j4 < BK / 4u; j4++) {
      let p4 = exp(s[j4] - m_new);
      l += p4.x + p4.y + p4.z + p4.w;
      for (var c = 0u; c < 4u; c++) {
        let j = 4u * j4 + c;
        for (var d = 0u; d < 16u; d++) { acc[d] = fma(vec4<f32>(p4[c]), vtile[j * 16u + d], acc[d]); }
      }
    }
    m = m_new;
    workgroupBarrier();
  }
  if (valid) {
    let obase = ((batch * p.nq + i) * p.o_stride + head * 64u) / 4u;
    let inv = 1.0 / l;
    for (var d = 0u; d < 16u; d++) { o[obase + d] = acc[d] * inv; }
  }
}
