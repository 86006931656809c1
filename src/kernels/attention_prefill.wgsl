// Causal GQA attention for T query tokens at positions step.start .. step.start + T - 1 (T read from
// step.rows) over the cache [0, step.start + T): query t sees keys 0 .. step.start + t.
// One query per thread: its scaled q and output accumulator live in registers (16 vec4, so
// head_dim <= 64), with its running max and sum. Workgroup (x, h) holds BQ queries of head h; K/V
// tiles of BK keys are staged in workgroup memory and read by all BQ threads (broadcast loads).
// Tiles past the last query of the workgroup are never loaded; the causal mask only bites on the
// diagonal tiles. Online softmax every SUB keys: one rescale of the accumulator per SUB keys.
// q token t, head h at q_offset + t * q_stride + h * head_dim; out dense [T][heads][head_dim].
#include "step.wgsl"
#include "attention_params.wgsl"

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k_cache: array<f32>;
@group(0) @binding(2) var<storage, read> v_cache: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> p: AttentionParams;
@group(0) @binding(5) var<storage, read> step: Step;

override BQ: u32 = 32u;  // queries per workgroup = threads
override BK: u32 = 32u;  // keys per workgroup-memory tile (multiple of SUB)
const D4: u32 = 16u;     // vec4 per head row in registers and tiles (head_dim <= 64, zero-padded)
const SUB: u32 = 8u;     // keys per online-softmax update
const MASKED = -1.0e30;

var<workgroup> k_tile: array<vec4<f32>, BK * D4>;
var<workgroup> v_tile: array<vec4<f32>, BK * D4>;

// Elements 4 * c4 .. 4 * c4 + 3 of a head row starting at base in a scalar buffer; zero past head_dim.
fn load_q(base: u32, c4: u32) -> vec4<f32> {
  var r = vec4<f32>(0.0);
  for (var c = 0u; c < 4u; c++) {
    if (4u * c4 + c < p.head_dim) { r[c] = q[base + 4u * c4 + c]; }
  }
  return r;
}

@compute @workgroup_size(BQ)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let D = p.head_dim;
  let T = step.rows;
  let h = wg.y;
  let kvh = h / (p.heads / p.kv_heads);
  let q0 = wg.x * BQ;
  let kv_end = step.start + min(T, q0 + BQ);  // one past the last key any query here sees
  let t_raw = q0 + li;
  let t = min(t_raw, T - 1u);  // threads past T compute a valid row and skip the write
  let pos = step.start + t;    // the last key this query sees

  var qr: array<vec4<f32>, 16>;
  var acc: array<vec4<f32>, 16>;
  let q_base = p.q_offset + t * p.q_stride + h * D;
  for (var c4 = 0u; c4 < D4; c4++) {
    qr[c4] = load_q(q_base, c4) * p.scale;
    acc[c4] = vec4<f32>(0.0);
  }
  var m = MASKED;
  var l = 0.0;

  for (var k0 = 0u; k0 < kv_end; k0 += BK) {
    for (var idx = li; idx < BK * D4; idx += BQ) {
      let key = k0 + idx / D4;
      let c4 = idx % D4;
      var kv = vec4<f32>(0.0);
      var vv = vec4<f32>(0.0);
      if (key < kv_end) {
        let src = (key * p.kv_heads + kvh) * p.row + 4u * c4;
        for (var c = 0u; c < 4u; c++) {
          if (4u * c4 + c < D) {
            kv[c] = k_cache[src + c];
            vv[c] = v_cache[src + c];
          }
        }
      }
      k_tile[idx] = kv;
      v_tile[idx] = vv;
    }
    workgroupBarrier();
    // Key 0 is in the first SUB group and visible to every query, so m is finite after it and
    // exp(MASKED - m) is exactly 0 for masked keys from then on.
    for (var j0 = 0u; j0 < BK; j0 += SUB) {
      var s: array<f32, 8>;  // SUB scores
      var mx = m;
      for (var j = 0u; j < SUB; j++) {
        let kb = (j0 + j) * D4;
        var d = 0.0;
        for (var c4 = 0u; c4 < D4; c4++) { d += dot(qr[c4], k_tile[kb + c4]); }
        s[j] = select(MASKED, d, k0 + j0 + j <= pos);
        mx = max(mx, s[j]);
      }
      let corr = exp(m - mx);
      l *= corr;
      for (var c4 = 0u; c4 < D4; c4++) { acc[c4] *= corr; }
      for (var j = 0u; j < SUB; j++) {
        let pj = exp(s[j] - mx);
        l += pj;
        let vb = (j0 + j) * D4;
        for (var c4 = 0u; c4 < D4; c4++) { acc[c4] = fma(vec4<f32>(pj), v_tile[vb + c4], acc[c4]); }
      }
      m = mx;
    }
    workgroupBarrier();
  }

  if (t_raw < T) {
    let inv = 1.0 / l;
    let o_base = (t * p.heads + h) * D;
    for (var c4 = 0u; c4 < D4; c4++) {
      let o = acc[c4] * inv;
      for (var c = 0u; c < 4u; c++) {
        if (4u * c4 + c < D) { out[o_base + 4u * c4 + c] = o[c]; }
      }
    }
  }
}
