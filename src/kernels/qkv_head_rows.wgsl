// QKV_MATVEC of attention_decode_quad.wgsl: the one-block attention workgroup of q head h computes
// the token's rows it needs of the fused qkv projection itself, so the decode step loses the qkv
// matvec's dispatch (one dependent stage of ~6 us a layer on an H100: bench/NOTES.md):
//   q rows [q_offset + 64 h, + 64), k rows [k_offset + 64 kvh, + 64), v rows [v_offset + 64 kvh, + 64)
// of W (symmetric 4-bit blocks, q4_block.wgsl) times rmsnorm(x) * norm_w. The two q heads of a kv
// head both compute its k and v rows (the second read hits the L2 cache).
//
// A lane group of QL lanes (within one subgroup) owns rows g, g + QG, ...; lane l takes blocks
// l, l + QL, ... of each. Every weight load of a lane is issued before anything waits on memory
// (qkv_issue), and the caller issues its other loads (norm weights, RoPE, the first K/V rows)
// before staging x, so those latencies overlap. Include after `override WG`, the bindings x,
// norms, wqkv, sqkv and p (AttentionParams), reduce.wgsl and q4_block.wgsl.

override BLOCKS: u32 = 32u;                  // hidden / 32
override QL: u32 = 32u;                      // lanes per weight row: a power of two <= the smallest subgroup
override QG: u32 = WG / QL;                  // lane groups
override QR: u32 = (192u + QG - 1u) / QG;    // rows per lane group
override QI: u32 = (BLOCKS + QL - 1u) / QL;  // blocks per lane and row
const QKV_ROWS = 192u;
const MAX_QKV_HELD = 24u;  // QR * QI, checked by the C++ side

var<workgroup> xn: array<vec4<f32>, BLOCKS * 8u>;   // x * norm_w, swizzled (x_slot)
var<workgroup> qkv_rows: array<f32, QKV_ROWS>;      // q, then k, then v: 64 each

struct QkvHeld {
  w: array<vec4<u32>, MAX_QKV_HELD>,
  s: array<f32, MAX_QKV_HELD>,
}

// Piece k of block b sits at b * 8 + (k + b) % 8: lanes reading the same piece of consecutive
// blocks land on different banks.
fn x_slot(i: u32) -> u32 { return (i & ~7u) + ((i + i / 8u) & 7u); }

fn qkv_weight_row(r: u32, h: u32, kvh: u32) -> u32 {
  if (r < 64u) { return p.q_offset + h * 64u + r; }
  if (r < 128u) { return p.k_offset + kvh * 64u + r - 64u; }
  return p.v_offset + kvh * 64u + r - 128u;
}

fn qkv_issue(li: u32, h: u32, kvh: u32) -> QkvHeld {
  var held: QkvHeld;
  let g = li / QL;
  let lane = li % QL;
  for (var j = 0u; j < QR; j++) {
    let r = g + j * QG;
    for (var i = 0u; i < QI; i++) {
      let b = lane + i * QL;
      if (r < QKV_ROWS && b < BLOCKS) {
        let blk = qkv_weight_row(r, h, kvh) * BLOCKS + b;
        held.w[j * QI + i] = wqkv[blk];
        held.s[j * QI + i] = sqkv[blk];
      }
    }
  }
  return held;
}

// Stages x * norm_w and returns the RMSNorm scale 1 / rms(x) (uniform control flow; the
// reduction's barriers publish xn).
fn qkv_stage_x(li: u32, sg_size: u32) -> f32 {
  var ss = 0.0;
  for (var i = li; i < BLOCKS * 8u; i += WG) {
    let v = x[i];
    ss += dot(v, v);
    xn[x_slot(i)] = v * norms[i];
  }
  return inverseSqrt(workgroup_sum(ss, li, sg_size) / f32(BLOCKS * 32u) + p.eps);
}

// The rows into qkv_rows (uniform control flow: the lane group's xor shuffles).
fn qkv_dots(held: QkvHeld, li: u32, norm_scale: f32) {
  let g = li / QL;
  let lane = li % QL;
  for (var j = 0u; j < QR; j++) {
    let r = g + j * QG;
    var acc = 0.0;
    for (var i = 0u; i < QI; i++) {
      let b = lane + i * QL;
      if (r < QKV_ROWS && b < BLOCKS) {
        var xs: array<vec4<f32>, 8>;
        for (var k = 0u; k < 8u; k++) { xs[k] = xn[x_slot(b * 8u + k)]; }
        acc += held.s[j * QI + i] * q4_block_dot(held.w[j * QI + i], xs, 8.0);
      }
    }
    for (var off = 1u; off < QL; off <<= 1u) { acc += subgroupShuffleXor(acc, off); }
    if (lane == 0u && r < QKV_ROWS) { qkv_rows[r] = acc * norm_scale; }
  }
  workgroupBarrier();
}

// Elements 4i .. 4i + 3 of the rows (after qkv_dots).
fn qkv_row4(i: u32) -> vec4<f32> {
  return vec4<f32>(qkv_rows[4u * i], qkv_rows[4u * i + 1u], qkv_rows[4u * i + 2u], qkv_rows[4u * i + 3u]);
}
