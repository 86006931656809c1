// 4-bit block quantization of the LLM pack (docs/formats.md "4-bit matrices"), with dequantizers.
//
// Layout of a [rows][cols] matrix (cols a multiple of 32): element (r, c) is nibble c % 8 (bits
// 4k..4k+3 hold element 8w+k) of little-endian u32 word (r*cols + c) / 8; scales are f32
// [rows][cols/32]; zero points (asymmetric only) are 4-bit [rows][cols/32] packed the same way
// over the flattened index r*(cols/32) + block.
//
// Symmetric, w = (q - 8) * scale: each block tries two scales and keeps the one with the smaller
// squared error: scale = m / -8 (m = the block's value of largest magnitude, so m lands exactly
// on q = 0 and the full range -8..7 is used; the opposite extreme may clip to +7) and scale =
// |m| / 7 (no clipping). Bound: |w - deq| <= |m| / 8 for every element.
// Asymmetric (head/embed), w = (q - zp) * scale: the range [min(lo, 0), max(hi, 0)] is split into
// 15 steps, zp = round(-lo / scale). Bound: |w - deq| <= scale / 2 = (hi' - lo') / 30.
// Quantizing dequantized values gives the same values back (what `ember dequant` then `ember
// pack` relies on): symmetric scales m / -8 and fl(|m| / 7) survive the round trip exactly; an
// asymmetric block on a grid whose step is one ulp from (hi - lo) / 15 keeps that step.
// K-major (down.kquant): the transpose [cols][rows] quantized symmetrically.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ember::formats {

struct Q4Matrix {
  int64_t rows = 0, cols = 0;       // of the stored matrix (k-major: [original cols][original rows])
  std::vector<uint32_t> quant;      // rows*cols/8 words
  std::vector<float> scales;        // rows*cols/32
  std::vector<uint32_t> zero_points;  // asymmetric only: ceil(rows*cols/32 / 8) words

  std::span<const uint8_t> quant_bytes() const { return as_bytes(quant); }
  std::span<const uint8_t> scale_bytes() const { return as_bytes(scales); }
  std::span<const uint8_t> zero_point_bytes() const { return as_bytes(zero_points); }

 private:
  template <typename T>
  static std::span<const uint8_t> as_bytes(const std::vector<T>& v) {
    return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
  }
};

// `w` is row-major [rows][cols]; cols must be a multiple of 32 (an ember::Error otherwise).
Q4Matrix quantize_q4_symmetric(std::span<const float> w, int64_t rows, int64_t cols);
Q4Matrix quantize_q4_asymmetric(std::span<const float> w, int64_t rows, int64_t cols);
// `w` is [rows][cols] (the down matrix [hidden][ffn]); the result stores its transpose
// ([cols][rows], 32-blocks along `rows`), so rows must be a multiple of 32.
Q4Matrix quantize_q4_kmajor(std::span<const float> w, int64_t rows, int64_t cols);

// Dequantizers over raw section bytes (little-endian), returning row-major [rows][cols].
std::vector<float> dequantize_q4_symmetric(std::span<const uint8_t> quant, std::span<const uint8_t> scales,
                                           int64_t rows, int64_t cols);
std::vector<float> dequantize_q4_asymmetric(std::span<const uint8_t> quant, std::span<const uint8_t> scales,
                                            std::span<const uint8_t> zero_points, int64_t rows, int64_t cols);
// kquant/kscales of a [rows][cols] matrix (stored as [cols][rows]); returns [rows][cols].
std::vector<float> dequantize_q4_kmajor(std::span<const uint8_t> kquant, std::span<const uint8_t> kscales,
                                        int64_t rows, int64_t cols);

// One dequantized row (embedding lookup on the CPU, tests).
void dequantize_q4_row(std::span<const uint8_t> quant, std::span<const uint8_t> scales,
                       std::span<const uint8_t> zero_points, int64_t cols, int64_t row, float* out);

// The documented per-element error bounds, for one block of original values.
float q4_symmetric_bound(std::span<const float> block);
float q4_asymmetric_bound(std::span<const float> block);

// Relative L2 error ||a - b|| / ||b|| (0 when both are zero).
double relative_l2(std::span<const float> a, std::span<const float> b);

}  // namespace ember::formats
