enable subgroups;
// Flash attention for head size 64 (same contract and layout as flash_attention.wgsl), register-
// tiled for reuse: a quad of 4 adjacent lanes owns 4 queries; lane p of the quad holds dims
// [16p, 16p+16) of those queries' q and output accumulators. Each key's 4 vec4 loaded from
// workgroup memory feed 4 queries (16 FMAs per load instead of 4). Lane p keeps query a ^ p in its
// slot a, so the quad's exchanges need no reordering: the partial dot products are summed by a
// transposing reduction (3 scalar shuffles a key: lane p ends with query p's score, its slot 0),
// lane p runs query p's softmax alone (one exp a key), and the 4 probabilities come back for P V in
// slot order (3 shuffles). Online softmax every SUB keys, in base 2 (log2(e) folded into the query
// scale). Needs subgroups whose size is a multiple of 4, laid out over local_invocation_index.
// PREFETCH: the next K/V tile is read from memory into registers while the current one is used
// (each thread holds PER = BK * 16 / BQ vec4 of each), so the tile load no longer waits on memory.
#include "flash_attention_params.wgsl"

override BQ: u32 = 64u;  // threads = queries per workgroup (multiple of 4)
override BK: u32 = 32u;  // keys per workgroup-memory tile (multiple of SUB; 64 needs 32 KiB)
const SUB: u32 = 8u;     // keys per online-softmax update

#include "flash_attention_kv_tile.wgsl"

// Lane `part` of a quad holds query `part`'s value; returns the quad's 4 in slot order (slot a:
// query a ^ part).
fn quad_gather(x: f32) -> vec4<f32> {
  return vec4<f32>(x, subgroupShuffleXor(x, 1u), subgroupShuffleXor(x, 2u), subgroupShuffleXor(x, 3u));
}

// The quad's partial scores s (this lane's 16 dims, in slot order) summed over the 4 lanes; returns
// query `part`'s total. Round 1: lane ^ 2 holds this lane's slots 0, 1 queries in its slots 2, 3;
// round 2: lane ^ 1 holds this lane's query in its slot 1.
fn quad_sum_own(s: vec4<f32>) -> f32 {
  let t = s.xy + subgroupShuffleXor(s.zw, 2u);
  return t.x + subgroupShuffleXor(t.y, 1u);
}

@compute @workgroup_size(BQ)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let head = wg.y;
  let batch = wg.z;
  let part = li % 4u;
  let q0 = wg.x * BQ + (li / 4u) * 4u;  // first of the quad's 4 queries
  var qr: array<vec4<f32>, 16>;   // qr[4a + b]: slot a (query q0 + (a ^ part)), dims 16 part + 4b .. +3
  var acc: array<vec4<f32>, 16>;
  let scale = p.scale * LOG2E;
  for (var a = 0u; a < 4u; a++) {
    let qi = min(q0 + (a ^ part), p.nq - 1u);
    let base = ((batch * p.nq + qi) * p.q_stride + p.q_offset + head * 64u) / 4u + part * 4u;
    for (var b = 0u; b < 4u; b++) {
      qr[4u * a + b] = q[base + b] * scale;
      acc[4u * a + b] = vec4<f32>(0.0);
    }
  }
  var m = NEG_BIG;  // query `part`'s running max and sum
  var l = 0.0;
#if PREFETCH
  var kn: array<vec4<f32>, 8>;
  var vn: array<vec4<f32>, 8>;
  for (var r = 0u; r < PER; r++) {
    let t = kv_at(0u, li + r * BQ, head, batch);
    kn[r] = t[0];
    vn[r] = t[1];
  }
#endif
  for (var k0 = 0u; k0 < p.nk; k0 += BK) {
#if PREFETCH
    for (var r = 0u; r < PER; r++) {
      ktile[li + r * BQ] = kn[r];
      vtile[li + r * BQ] = vn[r];
    }
    workgroupBarrier();
    if (k0 + BK < p.nk) {  // uniform: the next tile's loads fly while this one is used
      for (var r = 0u; r < PER; r++) {
        let t = kv_at(k0 + BK, li + r * BQ, head, batch);
        kn[r] = t[0];
        vn[r] = t[1];
      }
    }
#else
    for (var idx = li; idx < BK * 16u; idx += BQ) {
      let t = kv_at(k0, idx, head, batch);
      ktile[idx] = t[0];
      vtile[idx] = t[1];
    }
    workgroupBarrier();
#endif
    for (var j0 = 0u; j0 < BK; j0 += SUB) {
      var d: array<vec4<f32>, 8>;  // SUB: d[j][a] = this lane's part of slot a's score with key k0+j0+j
      for (var j = 0u; j < SUB; j++) {
        let kb = (j0 + j) * 16u + part * 4u;
        let k_0 = ktile[kb];
        let k_1 = ktile[kb + 1u];
        let k_2 = ktile[kb + 2u];
        let k_3 = ktile[kb + 3u];
        var part_dot = vec4<f32>(
            dot(qr[0], k_0) + dot(qr[1], k_1) + dot(qr[2], k_2) + dot(qr[3], k_3),
            dot(qr[4], k_0) + dot(qr[5], k_1) + dot(qr[6], k_2) + dot(qr[7], k_3),
            dot(qr[8], k_0) + dot(qr[9], k_1) + dot(qr[10], k_2) + dot(qr[11], k_3),
            dot(qr[12], k_0) + dot(qr[13], k_1) + dot(qr[14], k_2) + dot(qr[15], k_3));
        if (k0 + j0 + j >= p.nk) { part_dot = vec4<f32>(NEG_BIG / 4.0); }  // /4: the quad sum stays finite
        d[j] = part_dot;
      }
      // Written out, 8 independent reductions whose shuffle latencies overlap (reducing inside the
      // key loop above measured slower).
      var s = array<f32, 8>(quad_sum_own(d[0]), quad_sum_own(d[1]), quad_sum_own(d[2]), quad_sum_own(d[3]),
                            quad_sum_own(d[4]), quad_sum_own(d[5]), quad_sum_own(d[6]), quad_sum_own(d[7]));
      var mx = m;
      for (var j = 0u; j < SUB; j++) { mx = max(mx, s[j]); }
      let corr = exp2(m - mx);
      l *= corr;
      let corr4 = quad_gather(corr);
      for (var b = 0u; b < 4u; b++) {
        acc[b] *= corr4.x;
        acc[4u + b] *= corr4.y;
        acc[8u + b] *= corr4.z;
        acc[12u + b] *= corr4.w;
      }
      for (var j = 0u; j < SUB; j++) {
        s[j] = exp2(s[j] - mx);
        l += s[j];
      }
      var pr = array<vec4<f32>, 8>(quad_gather(s[0]), quad_gather(s[1]), quad_gather(s[2]), quad_gather(s[3]),
                                   quad_gather(s[4]), quad_gather(s[5]), quad_gather(s[6]), quad_gather(s[7]));
      for (var j = 0u; j < SUB; j++) {
        let pj = pr[j];
        let vb = (j0 + j) * 16u + part * 4u;
        for (var b = 0u; b < 4u; b++) {
          let v = vtile[vb + b];
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
  let inv = quad_gather(1.0 / l);
  for (var a = 0u; a < 4u; a++) {
    let qi = q0 + (a ^ part);
    if (qi < p.nq) {
      let base = ((batch * p.nq + qi) * p.o_stride + head * 64u) / 4u + part * 4u;
      for (var b = 0u; b < 4u; b++) { o[base + b] = acc[4u * a + b] * inv[a]; }
    }
  }
}
