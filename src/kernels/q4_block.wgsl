// The 4-bit block format of the LLM pack (docs/formats.md "LLM runtime pack"), shared by every q4
// kernel: a 32-block is 4 little-endian u32 words, word k holds elements 8k..8k+7 (nibble i =
// element 8k+i). Symmetric blocks decode as (q - 8) * scale, asymmetric ones as (q - zp) * scale.
//
// Nibbles become floats without an integer-to-float conversion (NVIDIA GPUs issue those at a
// fraction of the FMA rate; the decode step measured shorter without them: bench/PERFORMANCE.md,
// 42f1438). OR-ing the nibble j of a 16-bit half,
// masked in place, into the bits of 2^23 gives exactly 2^23 + q * 16^j (the mantissa holds
// integers below 2^23 exactly); subtracting 2^23 + zero * 16^j leaves exactly (q - zero) * 16^j.
// One mask, one OR (one LOP3) and one subtraction a nibble.

const Q4_MASKS = vec4<u32>(0xFu, 0xF0u, 0xF00u, 0xF000u);
const Q4_UNSCALE = vec4<f32>(1.0, 1.0 / 16.0, 1.0 / 256.0, 1.0 / 4096.0);

// 2^23 + zero * 16^j: what q4_scaled subtracts.
fn q4_bias(zero: f32) -> vec4<f32> {
  return vec4<f32>(8388608.0) + zero * vec4<f32>(1.0, 16.0, 256.0, 4096.0);
}

// (q_j - zero) * 16^j for the four nibbles in bits 0..15 of `h` (bias = q4_bias(zero)).
fn q4_scaled(h: u32, bias: vec4<f32>) -> vec4<f32> {
  return bitcast<vec4<f32>>((vec4<u32>(h) & Q4_MASKS) | vec4<u32>(0x4B000000u)) - bias;
}

// Elements 8k..8k+3 (low half) and 8k+4..8k+7 (high half) of a word, minus the zero point.
fn q4_low(word: u32, zero: f32) -> vec4<f32> {
  return q4_scaled(word, q4_bias(zero)) * Q4_UNSCALE;
}
fn q4_high(word: u32, zero: f32) -> vec4<f32> {
  return q4_scaled(word >> 16u, q4_bias(zero)) * Q4_UNSCALE;
}

// sum_i (q_i - zero) * x_i over one block; xs[j] holds elements 4j..4j+3. The scale is applied
// once by the caller. Component j of the running sum collects the 16^j-scaled nibbles j (exact
// powers of two, so no precision is lost), unscaled once at the end.
fn q4_block_dot(w: vec4<u32>, xs: array<vec4<f32>, 8>, zero: f32) -> f32 {
  let bias = q4_bias(zero);
  var s = vec4<f32>(0.0);
  for (var k = 0u; k < 4u; k++) {
    s = fma(q4_scaled(w[k], bias), xs[2u * k], s);
    s = fma(q4_scaled(w[k] >> 16u, bias), xs[2u * k + 1u], s);
  }
  return dot(s, Q4_UNSCALE);
}

// Nibble i of a packed 4-bit array, given the word holding it (words[i / 8]).
fn q4_nibble(word: u32, i: u32) -> u32 {
  return (word >> (4u * (i % 8u))) & 15u;
}
