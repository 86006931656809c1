// CPU reference for the 4-bit matrix format of the LLM runtime pack (docs/formats.md "LLM runtime
// pack"): quantizers that produce the exact packed layout, dequantization, and plain double
// precision matrix products. The oracle for every q4 kernel; obviously right, never fast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::reference {

constexpr uint32_t kQ4Block = 32;  // elements per scale (and per zero point)

// A packed 4-bit matrix [rows][cols] as it lies in the pack. Element (r, c) is nibble c % 8 of
// quant word (r * cols + c) / 8; scales are [rows][cols / 32]; zero_points (asymmetric only,
// else empty) are 4-bit [rows][cols / 32] packed the same way over the flattened array.
struct Q4Host {
  uint32_t rows = 0, cols = 0;
  std::vector<uint32_t> quant;
  std::vector<float> scales;
  std::vector<uint32_t> zero_points;
  bool asymmetric() const { return !zero_points.empty(); }
  uint32_t blocks_per_row() const { return cols / kQ4Block; }
};

// Nibble i of a packed 4-bit array (bits 4k..4k+3 of word i / 8 hold element 8 * (i / 8) + k).
inline uint32_t q4_nibble(const std::vector<uint32_t>& words, size_t i) { return (words[i / 8] >> (4 * (i % 8))) & 0xFu; }

// Symmetric, per 32-block: scale = max|w| / 7, q = clamp(round(w / scale) + 8, 0, 15), so
// w ~ (q - 8) * scale and q never needs the value 0 (the grid is -7..7 around 8). An all-zero
// block gets scale 0 and q = 8. `w` is row-major [rows][cols]; cols must be a multiple of 32.
Q4Host quantize_q4_symmetric(const std::vector<float>& w, uint32_t rows, uint32_t cols);

// Asymmetric, per 32-block: scale = (max - min) / 15, zp = clamp(round(-min / scale), 0, 15),
// q = clamp(round(w / scale) + zp, 0, 15), w ~ (q - zp) * scale. A constant block (max == min)
// falls back to the symmetric grid: scale = max(|min|, |max|) / 7, zp = 8 (all-zero: scale 0).
Q4Host quantize_q4_asymmetric(const std::vector<float>& w, uint32_t rows, uint32_t cols);

// The k-major copy of a matrix W [rows][cols] (the MLP down matrix: rows = hidden outputs, cols =
// ffn inputs): quantizes W transposed, so the result is [cols][rows] with 32-blocks along the
// outputs. rows must be a multiple of 32.
Q4Host quantize_q4_kmajor(const std::vector<float>& w, uint32_t rows, uint32_t cols);

// The stored matrix in f32, [m.rows][m.cols] row-major: (q - 8) * scale or (q - zp) * scale.
std::vector<float> dequantize_q4(const Q4Host& m);

std::vector<float> transpose(const std::vector<float>& a, uint32_t rows, uint32_t cols);

// y[r] = sum_c w[r][c] x[c], accumulated in double.
std::vector<float> matvec(const std::vector<float>& w, uint32_t rows, uint32_t cols, const std::vector<float>& x);

// Y[t][r] = sum_c w[r][c] X[t][c] for t < tokens (X is [tokens][cols], Y is [tokens][rows]).
std::vector<float> matmul(const std::vector<float>& w, uint32_t rows, uint32_t cols, const std::vector<float>& x,
                          uint32_t tokens);

// The LFM2 MLP on a normed h: gate_up [2 * ffn][hidden] (gate rows first), down [hidden][ffn]:
// returns down(silu(gate h) * (up h)), all in double.
std::vector<float> mlp(const std::vector<float>& gate_up, const std::vector<float>& down, uint32_t hidden, uint32_t ffn,
                       const std::vector<float>& h);

}  // namespace ember::reference
