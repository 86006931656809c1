#include "reference/q4_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ember::reference {
namespace {

void check_shape(size_t n, uint32_t rows, uint32_t cols) {
  if (cols % kQ4Block != 0) throw std::invalid_argument("q4 reference: cols must be a multiple of 32");
  if (n != size_t(rows) * cols) throw std::invalid_argument("q4 reference: data size does not match rows * cols");
}

void set_nibble(std::vector<uint32_t>& words, size_t i, uint32_t q) { words[i / 8] |= (q & 0xFu) << (4 * (i % 8)); }

uint32_t clamp_q(double v) { return static_cast<uint32_t>(std::clamp(v, 0.0, 15.0)); }

Q4Host empty_matrix(uint32_t rows, uint32_t cols, bool asymmetric) {
  Q4Host m;
  m.rows = rows;
  m.cols = cols;
  m.quant.assign((size_t(rows) * cols + 7) / 8, 0);
  m.scales.assign(size_t(rows) * (cols / kQ4Block), 0.0f);
  if (asymmetric) m.zero_points.assign((m.scales.size() + 7) / 8, 0);
  return m;
}

}  // namespace

Q4Host quantize_q4_symmetric(const std::vector<float>& w, uint32_t rows, uint32_t cols) {
  check_shape(w.size(), rows, cols);
  Q4Host m = empty_matrix(rows, cols, false);
  for (size_t b = 0; b < m.scales.size(); b++) {
    const float* v = &w[b * kQ4Block];
    float amax = 0;
    for (uint32_t i = 0; i < kQ4Block; i++) amax = std::max(amax, std::fabs(v[i]));
    float scale = amax / 7.0f;
    m.scales[b] = scale;
    for (uint32_t i = 0; i < kQ4Block; i++) {
      uint32_t q = scale == 0 ? 8 : clamp_q(std::nearbyint(v[i] / scale) + 8.0);
      set_nibble(m.quant, b * kQ4Block + i, q);
    }
  }
  return m;
}

Q4Host quantize_q4_asymmetric(const std::vector<float>& w, uint32_t rows, uint32_t cols) {
  check_shape(w.size(), rows, cols);
  Q4Host m = empty_matrix(rows, cols, true);
  for (size_t b = 0; b < m.scales.size(); b++) {
    const float* v = &w[b * kQ4Block];
    float lo = v[0], hi = v[0];
    for (uint32_t i = 1; i < kQ4Block; i++) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
    float scale = (hi - lo) / 15.0f;
    uint32_t zp;
    if (scale == 0) {  // constant block: represent it on the symmetric grid
      scale = std::max(std::fabs(lo), std::fabs(hi)) / 7.0f;
      zp = scale == 0 ? 0 : 8;
    } else {
      zp = clamp_q(std::nearbyint(-lo / scale));
    }
    m.scales[b] = scale;
    set_nibble(m.zero_points, b, zp);
    for (uint32_t i = 0; i < kQ4Block; i++) {
      uint32_t q = scale == 0 ? zp : clamp_q(std::nearbyint(v[i] / scale) + zp);
      set_nibble(m.quant, b * kQ4Block + i, q);
    }
  }
  return m;
}

Q4Host quantize_q4_kmajor(const std::vector<float>& w, uint32_t rows, uint32_t cols) {
  if (w.size() != size_t(rows) * cols) throw std::invalid_argument("q4 reference: data size does not match rows * cols");
  return quantize_q4_symmetric(transpose(w, rows, cols), cols, rows);
}

std::vector<float> dequantize_q4(const Q4Host& m) {
  std::vector<float> w(size_t(m.rows) * m.cols);
  for (size_t i = 0; i < w.size(); i++) {
    size_t b = i / kQ4Block;
    double zp = m.asymmetric() ? q4_nibble(m.zero_points, b) : 8.0;
    w[i] = static_cast<float>((double(q4_nibble(m.quant, i)) - zp) * m.scales[b]);
  }
  return w;
}

std::vector<float> transpose(const std::vector<float>& a, uint32_t rows, uint32_t cols) {
  std::vector<float> t(a.size());
  for (uint32_t r = 0; r < rows; r++)
    for (uint32_t c = 0; c < cols; c++) t[size_t(c) * rows + r] = a[size_t(r) * cols + c];
  return t;
}

std::vector<float> matvec(const std::vector<float>& w, uint32_t rows, uint32_t cols, const std::vector<float>& x) {
  return matmul(w, rows, cols, x, 1);
}

std::vector<float> matmul(const std::vector<float>& w, uint32_t rows, uint32_t cols, const std::vector<float>& x,
                          uint32_t tokens) {
  std::vector<float> y(size_t(tokens) * rows);
  for (uint32_t t = 0; t < tokens; t++)
    for (uint32_t r = 0; r < rows; r++) {
      double s = 0;
      for (uint32_t c = 0; c < cols; c++) s += double(w[size_t(r) * cols + c]) * x[size_t(t) * cols + c];
      y[size_t(t) * rows + r] = static_cast<float>(s);
    }
  return y;
}

std::vector<float> mlp(const std::vector<float>& gate_up, const std::vector<float>& down, uint32_t hidden, uint32_t ffn,
                       const std::vector<float>& h) {
  std::vector<double> a(ffn);
  for (uint32_t k = 0; k < ffn; k++) {
    double g = 0, u = 0;
    for (uint32_t c = 0; c < hidden; c++) {
      g += double(gate_up[size_t(k) * hidden + c]) * h[c];
      u += double(gate_up[size_t(ffn + k) * hidden + c]) * h[c];
    }
    a[k] = g / (1.0 + std::exp(-g)) * u;
  }
  std::vector<float> out(hidden);
  for (uint32_t r = 0; r < hidden; r++) {
    double s = 0;
    for (uint32_t k = 0; k < ffn; k++) s += double(down[size_t(r) * ffn + k]) * a[k];
    out[r] = static_cast<float>(s);
  }
  return out;
}

}  // namespace ember::reference
