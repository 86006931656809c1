// Causal GQA attention for T query tokens at positions step.start .. step.start + T - 1 (T read from
// step.rows) over the cache [0, step.start + T): query t sees keys 0 .. step.start + t.
// Workgroup (x, h) takes BQ queries of head h and walks the keys in tiles of BK held in workgroup
// memory (Q, K, V, scores and the output accumulator), with an online softmax per query row.
// q token t, head h at q_offset + t * q_stride + h * head_dim; out dense [T][heads][head_dim].
#include "step.wgsl"
#include "attention_params.wgsl"

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k_cache: array<f32>;
@group(0) @binding(2) var<storage, read> v_cache: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: AttentionParams;
@group(0) @binding(5) var<storage, read> step: Step;

override WG: u32 = 64u;
override BQ: u32 = 16u;     // queries per workgroup
override BK: u32 = 16u;     // keys per tile
override MAXD: u32 = 64u;   // >= head_dim

const MASKED = -1.0e30;

var<workgroup> q_tile: array<f32, BQ * MAXD>;
var<workgroup> k_tile: array<f32, BK * MAXD>;
var<workgroup> v_tile: array<f32, BK * MAXD>;
var<workgroup> o_tile: array<f32, BQ * MAXD>;
var<workgroup> scores: array<f32, BQ * BK>;
var<workgroup> row_max: array<f32, BQ>;
var<workgroup> row_sum: array<f32, BQ>;
var<workgroup> row_alpha: array<f32, BQ>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let D = p.head_dim;
  let T = step.rows;
  let h = wg.y;
  let kvh = h / (p.heads / p.kv_heads);
  let q0 = wg.x * BQ;
  let kv_end = step.start + min(T, q0 + BQ);  // one past the last key any query here sees

  for (var e = li; e < BQ * D; e += WG) {
    let qi = e / D;
    let t = q0 + qi;
    var v = 0.0;
    if (t < T) { v = q[p.q_offset + t * p.q_stride + h * D + e % D]; }
    q_tile[qi * MAXD + e % D] = v;
    o_tile[qi * MAXD + e % D] = 0.0;
  }
  for (var qi = li; qi < BQ; qi += WG) {
    row_max[qi] = MASKED;
    row_sum[qi] = 0.0;
  }
  workgroupBarrier();

  for (var k0 = 0u; k0 < kv_end; k0 += BK) {
    for (var e = li; e < BK * D; e += WG) {
      let j = e / D;
      let key = k0 + j;
      var kv = 0.0;
      var vv = 0.0;
      if (key < kv_end) {
        let src = (key * p.kv_heads + kvh) * p.row + e % D;
        kv = k_cache[src];
        vv = v_cache[src];
      }
      k_tile[j * MAXD + e % D] = kv;
      v_tile[j * MAXD + e % D] = vv;
    }
    workgroupBarrier();
    for (var e = li; e < BQ * BK; e += WG) {
      let qi = e / BK;
      let j = e % BK;
      var s = MASKED;
      if (q0 + qi < T && k0 + j <= step.start + q0 + qi) {
        var dot = 0.0;
        for (var i = 0u; i < D; i++) { dot += q_tile[qi * MAXD + i] * k_tile[j * MAXD + i]; }
        s = dot * p.scale;
      }
      scores[e] = s;
    }
    workgroupBarrier();
    for (var qi = li; qi < BQ; qi += WG) {
      var mt = MASKED;
      for (var j = 0u; j < BK; j++) { mt = max(mt, scores[qi * BK + j]); }
      let m_new = max(row_max[qi], mt);
      var sum = 0.0;
      for (var j = 0u; j < BK; j++) {
        let s = scores[qi * BK + j];
        let w = select(0.0, exp(s - m_new), s > MASKED);
        scores[qi * BK + j] = w;
        sum += w;
      }
      let alpha = exp(row_max[qi] - m_new);
      row_alpha[qi] = alpha;
      row_sum[qi] = row_sum[qi] * alpha + sum;
      row_max[qi] = m_new;
    }
    workgroupBarrier();
    for (var e = li; e < BQ * D; e += WG) {
      let qi = e / D;
      let i = e % D;
      var o = o_tile[qi * MAXD + i] * row_alpha[qi];
      for (var j = 0u; j < BK; j++) { o += scores[qi * BK + j] * v_tile[j * MAXD + i]; }
      o_tile[qi * MAXD + i] = o;
    }
    workgroupBarrier();
  }

  for (var e = li; e < BQ * D; e += WG) {
    let qi = e / D;
    let t = q0 + qi;
    if (t < T) { out[(t * p.heads + h) * D + e % D] = o_tile[qi * MAXD + e % D] / row_sum[qi]; }
  }
}
