#include "formats/q4_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "common/error.h"

namespace ember::formats {
namespace {

constexpr int64_t kBlock = 32;

void check_dims(int64_t rows, int64_t cols, const char* what) {
  if (rows <= 0 || cols <= 0 || cols % kBlock != 0)
    throw Error(std::string(what) + ": matrix " + std::to_string(rows) + " x " + std::to_string(cols) +
                    " cannot be 4-bit quantized", "quantizer", "the column count must be a positive multiple of 32");
}

// Splits [0, n) over the machine's cores; rows are independent.
void parallel_rows(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  int64_t threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 16);
  if (n < 64 || threads == 1) return fn(0, n);
  std::vector<std::thread> pool;
  int64_t step = (n + threads - 1) / threads;
  for (int64_t t = 0; t < threads; t++) {
    int64_t a = t * step, b = std::min(n, a + step);
    if (a < b) pool.emplace_back(fn, a, b);
  }
  for (auto& th : pool) th.join();
}

inline uint32_t nibble(std::span<const uint8_t> words, uint64_t index) {
  uint32_t w;
  std::memcpy(&w, words.data() + (index / 8) * 4, 4);
  return (w >> (4 * (index % 8))) & 0xF;
}

inline float f32_at(std::span<const uint8_t> bytes, uint64_t index) {
  float f;
  std::memcpy(&f, bytes.data() + index * 4, 4);
  return f;
}

// Quantizes one 32-block symmetrically: fills q[32] (0..15) and returns the scale.
float symmetric_block(const float* w, uint8_t* q) {
  float m = 0;
  for (int i = 0; i < kBlock; i++)
    if (std::fabs(w[i]) > std::fabs(m)) m = w[i];
  if (m == 0) {
    std::fill(q, q + kBlock, uint8_t{8});
    return 0.0f;
  }
  const float scales[2] = {m / -8.0f, std::fabs(m) / 7.0f};
  float best_scale = scales[0], best_err = INFINITY;
  uint8_t trial[kBlock];
  for (float s : scales) {
    float err = 0;
    for (int i = 0; i < kBlock; i++) {
      float v = std::clamp(std::nearbyint(w[i] / s) + 8.0f, 0.0f, 15.0f);
      trial[i] = static_cast<uint8_t>(v);
      float d = (v - 8.0f) * s - w[i];
      err += d * d;
    }
    if (err < best_err) {
      best_err = err;
      best_scale = s;
      std::memcpy(q, trial, kBlock);
    }
  }
  return best_scale;
}

// Quantizes one block asymmetrically with step `s` (lo: the block's minimum, at most 0): fills
// q[32] and *zp, returns the squared error of the dequantized block.
float asymmetric_trial(const float* w, float lo, float s, uint8_t* q, uint8_t* zp) {
  float z = std::clamp(std::nearbyint(-lo / s), 0.0f, 15.0f);
  *zp = static_cast<uint8_t>(z);
  float err = 0;
  for (int i = 0; i < kBlock; i++) {
    q[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(w[i] / s) + z, 0.0f, 15.0f));
    float d = (static_cast<float>(q[i]) - z) * s - w[i];  // as the dequantizer computes it
    err += d * d;
  }
  return err;
}

// Quantizes one block asymmetrically; returns the scale, sets *zp.
float asymmetric_block(const float* w, uint8_t* q, uint8_t* zp) {
  float lo = 0, hi = 0;  // the range always contains 0, so zp fits in 0..15
  for (int i = 0; i < kBlock; i++) {
    lo = std::min(lo, w[i]);
    hi = std::max(hi, w[i]);
  }
  float s = (hi - lo) / 15.0f;
  if (s == 0) {
    std::fill(q, q + kBlock, uint8_t{0});
    *zp = 0;
    return 0.0f;
  }
  if (asymmetric_trial(w, lo, s, q, zp) == 0) return s;
  // A block already on a 4-bit grid (a dequantized pack packed again) can have a step one ulp
  // from (hi - lo) / 15, through rounding in the dequantization and in that division: keep that
  // grid when it reproduces the block exactly, so quantizing dequantized values is exact.
  // Original weights are never exactly on a grid, so their quantization does not change.
  for (float n : {std::nextafter(s, 0.0f), std::nextafter(s, INFINITY)}) {
    uint8_t tq[kBlock], tz;
    if (asymmetric_trial(w, lo, n, tq, &tz) == 0) {
      std::memcpy(q, tq, kBlock);
      *zp = tz;
      return n;
    }
  }
  return s;
}

void pack_row(const uint8_t* q, int64_t cols, uint32_t* words) {
  for (int64_t c = 0; c < cols; c += 8) {
    uint32_t word = 0;
    for (int k = 0; k < 8; k++) word |= static_cast<uint32_t>(q[c + k]) << (4 * k);
    words[c / 8] = word;
  }
}

Q4Matrix quantize(std::span<const float> w, int64_t rows, int64_t cols, bool asymmetric) {
  if (static_cast<int64_t>(w.size()) != rows * cols)
    throw Error("quantizer got " + std::to_string(w.size()) + " values for a " + std::to_string(rows) + " x " +
                std::to_string(cols) + " matrix", "quantizer");
  Q4Matrix m;
  m.rows = rows;
  m.cols = cols;
  const int64_t blocks = cols / kBlock;
  m.quant.assign(static_cast<size_t>(rows * cols / 8), 0);
  m.scales.assign(static_cast<size_t>(rows * blocks), 0.0f);
  std::vector<uint8_t> zps(asymmetric ? static_cast<size_t>(rows * blocks) : 0);
  parallel_rows(rows, [&](int64_t r0, int64_t r1) {
    std::vector<uint8_t> q(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; r++) {
      const float* row = w.data() + r * cols;
      for (int64_t b = 0; b < blocks; b++) {
        float* scale = &m.scales[static_cast<size_t>(r * blocks + b)];
        if (asymmetric) *scale = asymmetric_block(row + b * kBlock, q.data() + b * kBlock, &zps[static_cast<size_t>(r * blocks + b)]);
        else *scale = symmetric_block(row + b * kBlock, q.data() + b * kBlock);
      }
      pack_row(q.data(), cols, m.quant.data() + r * cols / 8);
    }
  });
  if (asymmetric) {
    m.zero_points.assign((zps.size() + 7) / 8, 0);
    for (size_t i = 0; i < zps.size(); i++) m.zero_points[i / 8] |= static_cast<uint32_t>(zps[i]) << (4 * (i % 8));
  }
  return m;
}

void check_bytes(std::span<const uint8_t> bytes, uint64_t need, const char* what) {
  if (bytes.size() < need)
    throw Error(std::string(what) + " holds " + std::to_string(bytes.size()) + " bytes, " + std::to_string(need) +
                " needed", "dequantizer");
}

}  // namespace

Q4Matrix quantize_q4_symmetric(std::span<const float> w, int64_t rows, int64_t cols) {
  check_dims(rows, cols, "symmetric q4");
  return quantize(w, rows, cols, false);
}

Q4Matrix quantize_q4_asymmetric(std::span<const float> w, int64_t rows, int64_t cols) {
  check_dims(rows, cols, "asymmetric q4");
  return quantize(w, rows, cols, true);
}

Q4Matrix quantize_q4_kmajor(std::span<const float> w, int64_t rows, int64_t cols) {
  check_dims(cols, rows, "k-major q4");
  if (static_cast<int64_t>(w.size()) != rows * cols) throw Error("k-major quantizer got the wrong number of values", "quantizer");
  std::vector<float> t(w.size());
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) t[static_cast<size_t>(c * rows + r)] = w[static_cast<size_t>(r * cols + c)];
  return quantize(t, cols, rows, false);
}

void dequantize_q4_row(std::span<const uint8_t> quant, std::span<const uint8_t> scales,
                       std::span<const uint8_t> zero_points, int64_t cols, int64_t row, float* out) {
  const int64_t blocks = cols / kBlock;
  for (int64_t b = 0; b < blocks; b++) {
    const uint64_t bi = static_cast<uint64_t>(row * blocks + b);
    const float s = f32_at(scales, bi);
    const float zp = zero_points.empty() ? 8.0f : static_cast<float>(nibble(zero_points, bi));
    for (int64_t i = 0; i < kBlock; i++) {
      const int64_t c = b * kBlock + i;
      out[c] = (static_cast<float>(nibble(quant, static_cast<uint64_t>(row * cols + c))) - zp) * s;
    }
  }
}

std::vector<float> dequantize_q4_symmetric(std::span<const uint8_t> quant, std::span<const uint8_t> scales,
                                           int64_t rows, int64_t cols) {
  check_dims(rows, cols, "symmetric q4");
  check_bytes(quant, static_cast<uint64_t>(rows * cols / 2), "quant");
  check_bytes(scales, static_cast<uint64_t>(rows * cols / 32 * 4), "scales");
  std::vector<float> out(static_cast<size_t>(rows * cols));
  parallel_rows(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) dequantize_q4_row(quant, scales, {}, cols, r, out.data() + r * cols);
  });
  return out;
}

std::vector<float> dequantize_q4_asymmetric(std::span<const uint8_t> quant, std::span<const uint8_t> scales,
                                            std::span<const uint8_t> zero_points, int64_t rows, int64_t cols) {
  check_dims(rows, cols, "asymmetric q4");
  check_bytes(quant, static_cast<uint64_t>(rows * cols / 2), "quant");
  check_bytes(scales, static_cast<uint64_t>(rows * cols / 32 * 4), "scales");
  check_bytes(zero_points, (static_cast<uint64_t>(rows * cols / 32) + 7) / 8 * 4, "zero_points");
  std::vector<float> out(static_cast<size_t>(rows * cols));
  parallel_rows(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) dequantize_q4_row(quant, scales, zero_points, cols, r, out.data() + r * cols);
  });
  return out;
}

std::vector<float> dequantize_q4_kmajor(std::span<const uint8_t> kquant, std::span<const uint8_t> kscales,
                                        int64_t rows, int64_t cols) {
  std::vector<float> t = dequantize_q4_symmetric(kquant, kscales, cols, rows);
  std::vector<float> out(t.size());
  for (int64_t c = 0; c < cols; c++)
    for (int64_t r = 0; r < rows; r++) out[static_cast<size_t>(r * cols + c)] = t[static_cast<size_t>(c * rows + r)];
  return out;
}

float q4_symmetric_bound(std::span<const float> block) {
  float m = 0;
  for (float v : block) m = std::max(m, std::fabs(v));
  return m / 8.0f;
}

float q4_asymmetric_bound(std::span<const float> block) {
  float lo = 0, hi = 0;
  for (float v : block) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return (hi - lo) / 30.0f;
}

double relative_l2(std::span<const float> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); i++) {
    double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  if (den == 0) return num == 0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

}  // namespace ember::formats
