enable subgroups;
#if LAZY_RESCALE
diagnostic(off, subgroup_uniformity);  // the rescale branch is uniform over the subgroup (subgroupAny)
#endif
// Flash attention for head size 64 (same contract and layout as flash_attention.wgsl), the quad
// kernel's scheme (flash_attention_quad.wgsl) with octets: 8 adjacent lanes own 8 queries; lane p
// holds dims [8p, 8p+8) of those queries' q and output accumulators, query a ^ p in its slot a.
// Each key's 2 vec4 loaded from workgroup memory feed 8 queries (32 FMAs per load, twice the
// quad's), for 7 shuffles a key in the transposing reduction and 7 in the gather (the quad: 3 + 3).
// Online softmax every SUB keys, in base 2. Needs subgroups of a multiple of 8 lanes laid out over
// local_invocation_index.
// PREFETCH: the next K/V tile is read into registers while the current one is used.
// KEY_SPLIT: the keys are split over p.key_splits workgroups per query block (grid z = split * batches
// + batch), so that too few query blocks still fill a large GPU; each writes its normalised partial
// output, as a batch of its own, to o and the base-2 log-sum-exp of its scores to lse
// [split * batches + batch][head][query]. flash_attention_merge.wgsl merges them.
#include "flash_attention_params.wgsl"
#if KEY_SPLIT
@group(0) @binding(4) var<storage, read_write> lse: array<f32>;
#endif

override BQ: u32 = 64u;  // threads = queries per workgroup (multiple of 8)
override BK: u32 = 32u;  // keys per workgroup-memory tile (multiple of SUB)
const SUB: u32 = 8u;     // keys per online-softmax update (4 measured slower)

#include "flash_attention_kv_tile.wgsl"

// Each lane's value (its own query's) for the octet's 8 queries in slot order (slot a: lane ^ a).
struct Oct {
  lo: vec4<f32>,  // slots 0..3
  hi: vec4<f32>,  // slots 4..7
}
fn oct_gather(x: f32) -> Oct {
  return Oct(vec4<f32>(x, subgroupShuffleXor(x, 1u), subgroupShuffleXor(x, 2u), subgroupShuffleXor(x, 3u)),
             vec4<f32>(subgroupShuffleXor(x, 4u), subgroupShuffleXor(x, 5u), subgroupShuffleXor(x, 6u), subgroupShuffleXor(x, 7u)));
}

// The octet's partial scores (this lane's 8 dims, slot order) summed over the 8 lanes: this lane's
// query's total. Each round keeps the slots whose queries the partner holds in its upper half.
fn oct_sum_own(s: Oct) -> f32 {
  let t = s.lo + subgroupShuffleXor(s.hi, 4u);
  let u = t.xy + subgroupShuffleXor(t.zw, 2u);
  return u.x + subgroupShuffleXor(u.y, 1u);
}

fn slot(v: Oct, a: u32) -> f32 {
  return select(v.lo[a % 4u], v.hi[a % 4u], a >= 4u);
}

@compute @workgroup_size(BQ)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let head = wg.y;
#if KEY_SPLIT
  let batches = groups.z / p.key_splits;
  let batch = wg.z % batches;
  let k_begin = (wg.z / batches) * p.key_chunk;
  let k_end = min(k_begin + p.key_chunk, p.nk);
#else
  let batch = wg.z;
  let k_begin = 0u;
  let k_end = p.nk;
#endif
  let part = li % 8u;
  let q0 = wg.x * BQ + (li / 8u) * 8u;  // first of the octet's 8 queries
  var qr: array<vec4<f32>, 16>;   // qr[2a + b]: slot a (query q0 + (a ^ part)), dims 8 part + 4b .. +3
  var acc: array<vec4<f32>, 16>;
  let scale = p.scale * LOG2E;
  for (var a = 0u; a < 8u; a++) {
    let qi = min(q0 + (a ^ part), p.nq - 1u);
    let base = ((batch * p.nq + qi) * p.q_stride + p.q_offset + head * 64u) / 4u + part * 2u;
    for (var b = 0u; b < 2u; b++) {
      qr[2u * a + b] = q[base + b] * scale;
      acc[2u * a + b] = vec4<f32>(0.0);
    }
  }
  var m = NEG_BIG;  // query `part`'s running max and sum
  var l = 0.0;
#if PREFETCH
  var kn: array<vec4<f32>, 8>;
  var vn: array<vec4<f32>, 8>;
  for (var r = 0u; r < PER; r++) {
    let t = kv_at(k_begin, li + r * BQ, head, batch);
    kn[r] = t[0];
    vn[r] = t[1];
  }
#endif
  for (var k0 = k_begin; k0 < k_end; k0 += BK) {
#if PREFETCH
    for (var r = 0u; r < PER; r++) {
      ktile[li + r * BQ] = kn[r];
      vtile[li + r * BQ] = vn[r];
    }
    workgroupBarrier();
    if (k0 + BK < k_end) {  // uniform: the next tile's loads fly while this one is used
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
      var s: array<f32, SUB>;  // query `part`'s scores with keys k0 + j0 + j
      for (var j = 0u; j < SUB; j++) {
        let kb = (j0 + j) * 16u + part * 2u;
        let k_0 = ktile[kb];
        let k_1 = ktile[kb + 1u];
        let lo = vec4<f32>(dot(qr[0], k_0) + dot(qr[1], k_1), dot(qr[2], k_0) + dot(qr[3], k_1),
                           dot(qr[4], k_0) + dot(qr[5], k_1), dot(qr[6], k_0) + dot(qr[7], k_1));
        let hi = vec4<f32>(dot(qr[8], k_0) + dot(qr[9], k_1), dot(qr[10], k_0) + dot(qr[11], k_1),
                           dot(qr[12], k_0) + dot(qr[13], k_1), dot(qr[14], k_0) + dot(qr[15], k_1));
        s[j] = oct_sum_own(Oct(lo, hi));
        if (k0 + j0 + j >= k_end) { s[j] = NEG_BIG; }  // past the range: the tile holds zeros or other keys
      }
      var mx = m;
      for (var j = 0u; j < SUB; j++) { mx = max(mx, s[j]); }
#if LAZY_RESCALE
      // Rescale only when some query's max grew by more than 2^8 (uniform over the subgroup): with a
      // stale max the exponentials stay below 256 and the result is the same up to rounding.
      if (subgroupAny(mx > m + 8.0)) {
#endif
      let corr = exp2(m - mx);
      l *= corr;
      let c8 = oct_gather(corr);
      for (var a = 0u; a < 8u; a++) {
        let c = slot(c8, a);
        acc[2u * a] *= c;
        acc[2u * a + 1u] *= c;
      }
      m = mx;
#if LAZY_RESCALE
      }
#endif
#if FUSED_PV
      for (var j = 0u; j < SUB; j++) {
        let e = exp2(s[j] - m);
        l += e;
        let pr = oct_gather(e);
        let vb = (j0 + j) * 16u + part * 2u;
        let v_0 = vtile[vb];
        let v_1 = vtile[vb + 1u];
        for (var a = 0u; a < 8u; a++) {
          let pa = slot(pr, a);
          acc[2u * a] = fma(vec4<f32>(pa), v_0, acc[2u * a]);
          acc[2u * a + 1u] = fma(vec4<f32>(pa), v_1, acc[2u * a + 1u]);
        }
      }
#else
      var pr: array<Oct, SUB>;
      for (var j = 0u; j < SUB; j++) {
        let e = exp2(s[j] - m);
        l += e;
        pr[j] = oct_gather(e);
      }
      for (var j = 0u; j < SUB; j++) {
        let vb = (j0 + j) * 16u + part * 2u;
        let v_0 = vtile[vb];
        let v_1 = vtile[vb + 1u];
        for (var a = 0u; a < 8u; a++) {
          let pa = slot(pr[j], a);
          acc[2u * a] = fma(vec4<f32>(pa), v_0, acc[2u * a]);
          acc[2u * a + 1u] = fma(vec4<f32>(pa), v_1, acc[2u * a + 1u]);
        }
      }
#endif
    }
    workgroupBarrier();
  }
  let inv = oct_gather(1.0 / l);
#if KEY_SPLIT
  if (q0 + part < p.nq) { lse[(wg.z * groups.y + head) * p.nq + q0 + part] = m + log2(l); }
#endif
  for (var a = 0u; a < 8u; a++) {
    let qi = q0 + (a ^ part);
    if (qi < p.nq) {
      let base = ((wg.z * p.nq + qi) * p.o_stride + head * 64u) / 4u + part * 2u;
      let f = slot(inv, a);
      for (var b = 0u; b < 2u; b++) { o[base + b] = acc[2u * a + b] * f; }
    }
  }
}
