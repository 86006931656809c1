enable subgroups;
// Flash attention, FA2-style register tiling (same contract and layout as flash_attention.wgsl,
// head size D). A workgroup owns BQ queries of one head; per tile of BK keys:
//   1. K^T and V arrive in workgroup memory (Q^T sits there for the whole kernel, pre-scaled).
//   2. S = Q K^T as a register tile: a thread owns TQ queries x TK keys, so each d step is
//      TQ/4 + TK/4 vec4 loads for TQ*TK FMAs (the matmul's reuse, no cross-lane dot products).
//   3. Online softmax: the LANES threads sharing a query row agree on its max with subgroup xor
//      shuffles (LANES consecutive lanes, inside one subgroup); each keeps a partial row sum.
//   4. P^T goes to workgroup memory over the spent K^T; O += P V, a thread owning TQ queries x
//      D/LANES dims of the output accumulators.
// PREFETCH: workgroup-memory operands read one step ahead. exp2 with log2(e) folded into the
// query scale. Needs subgroups of a multiple of LANES lanes
// laid out over local_invocation_index. Workgroup memory: 4 * (D*BQ + max(D, BQ)*BK + BK*D) bytes.
#include "flash_attention_params.wgsl"

// Register-tile shape (structural: they size per-thread arrays).
#if HEAD_DIM_32
const D: u32 = 32u;
#else
const D: u32 = 64u;
#endif
#if QUERIES_PER_THREAD_4
const TQ: u32 = 4u;
#else
const TQ: u32 = 8u;
#endif
#if KEYS_PER_THREAD_4
const TK: u32 = 4u;
#else
const TK: u32 = 8u;
#endif
const LANES: u32 = 8u;          // threads sharing a query row
const BK: u32 = LANES * TK;     // keys per tile
const TQ4: u32 = TQ / 4u;
const TK4: u32 = TK / 4u;
const D4: u32 = D / 4u;
const BK4: u32 = BK / 4u;
const RC4: u32 = D / (4u * LANES);  // output dims per thread / 4
const NEG_BIG: f32 = -3.0e38;
const LOG2E: f32 = 1.4426950408889634;

override BQ: u32 = 64u;         // queries per workgroup (multiple of TQ)
override BQ4 = BQ / 4u;
override WG = (BQ / TQ) * LANES;
override KP4 = max(D, BQ) * BK4;

var<workgroup> qt: array<vec4<f32>, D * BQ4>;    // Q^T [d][query / 4], scaled by scale * log2(e)
var<workgroup> kp: array<vec4<f32>, KP4>;        // K^T [d][key / 4]; then P^T [key][query / 4]
var<workgroup> vs: array<vec4<f32>, BK * D4>;    // V [key][d / 4]

// Row `i` of q (zeros past nq), dims 4db .. 4db+3.
fn q_row(batch: u32, head: u32, i: u32, db: u32) -> vec4<f32> {
  if (i >= p.nq) { return vec4<f32>(0.0); }
  return q[((batch * p.nq + i) * p.q_stride + p.q_offset + head * D) / 4u + db];
}

// Key or value `j` (zeros past nk) at `offset`, dims 4db .. 4db+3.
fn kv_row(batch: u32, head: u32, j: u32, offset: u32, db: u32) -> vec4<f32> {
  if (j >= p.nk) { return vec4<f32>(0.0); }
  return kv[((batch * p.nk + j) * p.kv_stride + offset + head * D) / 4u + db];
}

// The columns of the 4x4 block with rows r0..r3.
fn transpose4(r0: vec4<f32>, r1: vec4<f32>, r2: vec4<f32>, r3: vec4<f32>) -> array<vec4<f32>, 4> {
  return array<vec4<f32>, 4>(vec4<f32>(r0.x, r1.x, r2.x, r3.x), vec4<f32>(r0.y, r1.y, r2.y, r3.y),
                             vec4<f32>(r0.z, r1.z, r2.z, r3.z), vec4<f32>(r0.w, r1.w, r2.w, r3.w));
}

// Q^T of the workgroup's queries, scaled: items of 4 queries x 4 dims.
fn load_q(batch: u32, head: u32, q0: u32, li: u32) {
  let sc = p.scale * LOG2E;
  for (var idx = li; idx < BQ4 * D4; idx += WG) {
    let qb = idx / D4;
    let db = idx % D4;
    let i = q0 + 4u * qb;
    let c = transpose4(q_row(batch, head, i, db), q_row(batch, head, i + 1u, db), q_row(batch, head, i + 2u, db),
                       q_row(batch, head, i + 3u, db));
    let at = 4u * db * BQ4 + qb;
    qt[at] = c[0] * sc;
    qt[at + BQ4] = c[1] * sc;
    qt[at + 2u * BQ4] = c[2] * sc;
    qt[at + 3u * BQ4] = c[3] * sc;
  }
}

// K^T and V of the tile at key k0.
fn load_tile(batch: u32, head: u32, k0: u32, li: u32) {
  for (var idx = li; idx < BK4 * D4; idx += WG) {
    let kb = idx / D4;
    let db = idx % D4;
    let j = k0 + 4u * kb;
    let o = p.k_offset;
    let c = transpose4(kv_row(batch, head, j, o, db), kv_row(batch, head, j + 1u, o, db), kv_row(batch, head, j + 2u, o, db),
                       kv_row(batch, head, j + 3u, o, db));
    let at = 4u * db * BK4 + kb;
    kp[at] = c[0];
    kp[at + BK4] = c[1];
    kp[at + 2u * BK4] = c[2];
    kp[at + 3u * BK4] = c[3];
  }
  for (var idx = li; idx < BK * D4; idx += WG) { vs[idx] = kv_row(batch, head, k0 + idx / D4, p.v_offset, idx % D4); }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let head = wg.y;
  let batch = wg.z;
  let q0 = wg.x * BQ;
  let lane = li % LANES;
  let rg = li / LANES;  // row group: queries q0 + rg*TQ .. + TQ-1
  // This thread's keys in a tile: vec v holds keys 4(v*LANES + lane) .. +3 (interleaved so the
  // lanes of a row group read consecutive vec4); its output dims likewise 4(u*LANES + lane) .. +3.
  load_q(batch, head, q0, li);

  var acc: array<vec4<f32>, TQ * RC4>;  // acc[a*RC4 + u]: query a, dims of vec u
  var m: array<f32, TQ>;
  var l: array<f32, TQ>;
  for (var a = 0u; a < TQ; a++) {
    m[a] = NEG_BIG;
    l[a] = 0.0;
    for (var u = 0u; u < RC4; u++) { acc[a * RC4 + u] = vec4<f32>(0.0); }
  }

  for (var k0 = 0u; k0 < p.nk; k0 += BK) {
    load_tile(batch, head, k0, li);
    workgroupBarrier();

    var s: array<vec4<f32>, TQ * TK4>;  // s[a*TK4 + v]: query a, keys of vec v
    for (var i = 0u; i < TQ * TK4; i++) { s[i] = vec4<f32>(0.0); }
    var qa: array<vec4<f32>, TQ4>;
    var kb: array<vec4<f32>, TK4>;
#if PREFETCH
    // Software pipelining: the operands of step d+1 are read while step d's FMAs run.
    var qn: array<vec4<f32>, TQ4>;
    var kn: array<vec4<f32>, TK4>;
    for (var t = 0u; t < TQ4; t++) { qn[t] = qt[rg * TQ4 + t]; }
    for (var v = 0u; v < TK4; v++) { kn[v] = kp[v * LANES + lane]; }
#endif
    for (var d = 0u; d < D; d++) {
#if PREFETCH
      qa = qn;
      kb = kn;
      let dn = min(d + 1u, D - 1u);
      for (var t = 0u; t < TQ4; t++) { qn[t] = qt[dn * BQ4 + rg * TQ4 + t]; }
      for (var v = 0u; v < TK4; v++) { kn[v] = kp[dn * BK4 + v * LANES + lane]; }
#else
      for (var t = 0u; t < TQ4; t++) { qa[t] = qt[d * BQ4 + rg * TQ4 + t]; }
      for (var v = 0u; v < TK4; v++) { kb[v] = kp[d * BK4 + v * LANES + lane]; }
#endif
      // Components named, not indexed: a dynamic vector index can push the tiles out of registers.
      for (var t = 0u; t < TQ4; t++) {
        let qv = qa[t];
        for (var v = 0u; v < TK4; v++) {
          let a = 4u * t * TK4 + v;
          s[a] = fma(vec4<f32>(qv.x), kb[v], s[a]);
          s[a + TK4] = fma(vec4<f32>(qv.y), kb[v], s[a + TK4]);
          s[a + 2u * TK4] = fma(vec4<f32>(qv.z), kb[v], s[a + 2u * TK4]);
          s[a + 3u * TK4] = fma(vec4<f32>(qv.w), kb[v], s[a + 3u * TK4]);
        }
      }
    }
    if (k0 + BK > p.nk) {  // the last, partial tile: keys past nk get no weight
      for (var v = 0u; v < TK4; v++) {
        let j = vec4<u32>(k0 + 4u * (v * LANES + lane)) + vec4<u32>(0u, 1u, 2u, 3u);
        let dead = j >= vec4<u32>(p.nk);
        for (var a = 0u; a < TQ; a++) { s[a * TK4 + v] = select(s[a * TK4 + v], vec4<f32>(NEG_BIG), dead); }
      }
    }

    // Online softmax.
    for (var a = 0u; a < TQ; a++) {
      var mx = m[a];
      for (var v = 0u; v < TK4; v++) {
        let sv = s[a * TK4 + v];
        mx = max(mx, max(max(sv.x, sv.y), max(sv.z, sv.w)));
      }
      mx = max(mx, subgroupShuffleXor(mx, 1u));
      mx = max(mx, subgroupShuffleXor(mx, 2u));
      mx = max(mx, subgroupShuffleXor(mx, 4u));
      let corr = exp2(m[a] - mx);
      m[a] = mx;
      var sum = 0.0;
      for (var v = 0u; v < TK4; v++) {
        let pv = exp2(s[a * TK4 + v] - vec4<f32>(mx));
        s[a * TK4 + v] = pv;
        sum += (pv.x + pv.y) + (pv.z + pv.w);
      }
      l[a] = l[a] * corr + sum;
      for (var u = 0u; u < RC4; u++) { acc[a * RC4 + u] *= corr; }
    }
    workgroupBarrier();  // every thread is done with K^T: P^T takes its place

    for (var v = 0u; v < TK4; v++) {
      let j = 4u * (v * LANES + lane);
      for (var t = 0u; t < TQ4; t++) {
        let p0 = s[(4u * t) * TK4 + v];
        let p1 = s[(4u * t + 1u) * TK4 + v];
        let p2 = s[(4u * t + 2u) * TK4 + v];
        let p3 = s[(4u * t + 3u) * TK4 + v];
        let at = j * BQ4 + rg * TQ4 + t;
        kp[at] = vec4<f32>(p0.x, p1.x, p2.x, p3.x);
        kp[at + BQ4] = vec4<f32>(p0.y, p1.y, p2.y, p3.y);
        kp[at + 2u * BQ4] = vec4<f32>(p0.z, p1.z, p2.z, p3.z);
        kp[at + 3u * BQ4] = vec4<f32>(p0.w, p1.w, p2.w, p3.w);
      }
    }
    workgroupBarrier();

    var pa: array<vec4<f32>, TQ4>;
    var vb: array<vec4<f32>, RC4>;
#if PREFETCH
    var pn: array<vec4<f32>, TQ4>;
    var vn: array<vec4<f32>, RC4>;
    for (var t = 0u; t < TQ4; t++) { pn[t] = kp[rg * TQ4 + t]; }
    for (var u = 0u; u < RC4; u++) { vn[u] = vs[u * LANES + lane]; }
#endif
    for (var j = 0u; j < BK; j++) {
#if PREFETCH
      pa = pn;
      vb = vn;
      let jn = min(j + 1u, BK - 1u);
      for (var t = 0u; t < TQ4; t++) { pn[t] = kp[jn * BQ4 + rg * TQ4 + t]; }
      for (var u = 0u; u < RC4; u++) { vn[u] = vs[jn * D4 + u * LANES + lane]; }
#else
      for (var t = 0u; t < TQ4; t++) { pa[t] = kp[j * BQ4 + rg * TQ4 + t]; }
      for (var u = 0u; u < RC4; u++) { vb[u] = vs[j * D4 + u * LANES + lane]; }
#endif
      for (var t = 0u; t < TQ4; t++) {
        let pv = pa[t];
        for (var u = 0u; u < RC4; u++) {
          let a = 4u * t * RC4 + u;
          acc[a] = fma(vec4<f32>(pv.x), vb[u], acc[a]);
          acc[a + RC4] = fma(vec4<f32>(pv.y), vb[u], acc[a + RC4]);
          acc[a + 2u * RC4] = fma(vec4<f32>(pv.z), vb[u], acc[a + 2u * RC4]);
          acc[a + 3u * RC4] = fma(vec4<f32>(pv.w), vb[u], acc[a + 3u * RC4]);
        }
      }
    }
    workgroupBarrier();  // before the next tile overwrites K^T / P^T and V
  }

  for (var a = 0u; a < TQ; a++) {
    var sum = l[a];
    sum += subgroupShuffleXor(sum, 1u);
    sum += subgroupShuffleXor(sum, 2u);
    sum += subgroupShuffleXor(sum, 4u);
    let i = q0 + rg * TQ + a;
    if (i < p.nq) {
      let inv = 1.0 / sum;
      let base = ((batch * p.nq + i) * p.o_stride + head * D) / 4u;
      for (var u = 0u; u < RC4; u++) { o[base + u * LANES + lane] = acc[a * RC4 + u] * inv; }
    }
  }
}
