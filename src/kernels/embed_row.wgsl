// Row `id` of a 4-bit table [rows][cols] (q4_block.wgsl), dequantized: the embedding lookup's
// (embed_q4.wgsl) and the sampler pick's, which embeds the id it picks for the next decode step
// (sampler_pick.wgsl, EMBED). The including file declares wq (the table's quant words, u32),
// scales (f32), zero_points (u32, with ASYMMETRIC) and out (vec4<f32>), and includes q4_block.wgsl.
// ASYMMETRIC: zero points (the tied head/embed matrix); otherwise (q - 8) * scale. An id >= rows
// (never valid) yields a zero row rather than a read outside the matrix.

// Quant word `word` (8 outputs) of row `id` into row t of out.
fn embed_word(id: u32, word: u32, t: u32, rows: u32, cols: u32) {
  let words = cols / 8u;
  var lo = vec4<f32>(0.0);
  var hi = vec4<f32>(0.0);
  if (id < rows) {
    let blk = id * (cols / 32u) + word / 4u;
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
  let o = (t * cols) / 4u + 2u * word;
  out[o] = lo;
  out[o + 1u] = hi;
}
