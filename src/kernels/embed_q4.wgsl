// Embedding lookup from a 4-bit matrix [rows = vocab][cols] (q4_block.wgsl): for t < tokens,
// out[t][:] = dequantized row ids[t]. The ids live in a GPU buffer, so decode can embed the token
// the GPU just sampled without a round trip. An id >= rows (never valid) yields a zero row
// rather than a read outside the matrix.
// ASYMMETRIC: zero points (the tied head/embed matrix); otherwise (q - 8) * scale.

struct Params {
  rows: u32,
  cols: u32,
  blocks: u32,  // cols / 32
  tokens: u32,
}

@group(0) @binding(0) var<storage, read> wq: array<u32>;
@group(0) @binding(1) var<storage, read> scales: array<f32>;
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> p: Params;
#if ASYMMETRIC
@group(0) @binding(5) var<storage, read> zero_points: array<u32>;
#endif

override WG: u32 = 128u;

#include "q4_block.wgsl"

// One lane per quant word (8 outputs); grid y = token.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let word = gid.x;  // word index inside the row
  let t = gid.y;
  let words = p.cols / 8u;
  if (word >= words || t >= p.tokens) { return; }
  let id = ids[t];
  var lo = vec4<f32>(0.0);
  var hi = vec4<f32>(0.0);
  if (id < p.rows) {
    let blk = id * p.blocks + word / 4u;
#if ASYMMETRIC
    let zero = f32(q4_nibble(zero_points[blk / 8u], blk));
#else
    let zero = 8.0;
#endif
    let q = wq[id * words + word];
    let s = scales[blk];
    lo = q4_low(q, zero) * s;
    hi = q4_high(q, zero) * s;
  }
  let o = (t * p.cols) / 4u + 2u * word;
  out[o] = lo;
  out[o + 1u] = hi;
}
