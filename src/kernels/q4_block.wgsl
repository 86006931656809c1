// The 4-bit block format of the LLM pack (DESIGN.md "LLM: the runtime pack"), shared by every q4
// kernel: a 32-block is 4 little-endian u32 words, word k holds elements 8k..8k+7 (nibble i =
// element 8k+i). Symmetric blocks decode as (q - 8) * scale, asymmetric ones as (q - zp) * scale.

// Elements 8k..8k+3 (low half) and 8k+4..8k+7 (high half) of a word, minus the zero point.
fn q4_low(word: u32, zero: f32) -> vec4<f32> {
  return vec4<f32>((vec4<u32>(word) >> vec4<u32>(0u, 4u, 8u, 12u)) & vec4<u32>(15u)) - zero;
}
fn q4_high(word: u32, zero: f32) -> vec4<f32> {
  return vec4<f32>((vec4<u32>(word) >> vec4<u32>(16u, 20u, 24u, 28u)) & vec4<u32>(15u)) - zero;
}

// sum_i (q_i - zero) * x_i over one block; xs[j] holds elements 4j..4j+3. The scale is applied
// once by the caller.
fn q4_block_dot(w: vec4<u32>, xs: array<vec4<f32>, 8>, zero: f32) -> f32 {
  var s = 0.0;
  for (var k = 0u; k < 4u; k++) {
    s += dot(q4_low(w[k], zero), xs[2u * k]) + dot(q4_high(w[k], zero), xs[2u * k + 1u]);
  }
  return s;
}

// Nibble i of a packed 4-bit array, given the word holding it (words[i / 8]).
fn q4_nibble(word: u32, i: u32) -> u32 {
  return (word >> (4u * (i % 8u))) & 15u;
}
