// CPU reference for the LFM2 non-matrix ops (semantics of transformers' Lfm2ForCausalLM), plain
// loops in double precision, written from the definitions and independently of the GPU code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ember::reference {

// x [rows][cols] -> x * rsqrt(mean(x^2) + eps) * w. For per-head norms pass rows = T * heads and
// cols = headDim (the heads of a token are consecutive rows).
inline std::vector<float> rmsnorm(const std::vector<float>& x, const std::vector<float>& w, uint32_t rows,
                                  uint32_t cols, float eps) {
  std::vector<float> out(size_t(rows) * cols);
  for (uint32_t r = 0; r < rows; r++) {
    double ss = 0;
    for (uint32_t c = 0; c < cols; c++) ss += double(x[size_t(r) * cols + c]) * x[size_t(r) * cols + c];
    double scale = 1.0 / std::sqrt(ss / cols + eps);
    for (uint32_t c = 0; c < cols; c++) out[size_t(r) * cols + c] = float(x[size_t(r) * cols + c] * scale * w[c]);
  }
  return out;
}

// Rotate-half RoPE in place on x [T][heads][d] at positions start + t; tables [positions][d/2].
inline void rope(std::vector<float>& x, uint32_t T, uint32_t heads, uint32_t d, uint32_t start,
                 const std::vector<float>& cos, const std::vector<float>& sin) {
  const uint32_t half = d / 2;
  for (uint32_t t = 0; t < T; t++)
    for (uint32_t h = 0; h < heads; h++) {
      float* v = &x[(size_t(t) * heads + h) * d];
      for (uint32_t i = 0; i < half; i++) {
        double c = cos[size_t(start + t) * half + i], s = sin[size_t(start + t) * half + i];
        double a = v[i], b = v[i + half];
        v[i] = float(a * c - b * s);
        v[i + half] = float(b * c + a * s);
      }
    }
}

// Causal GQA attention. q [T][H][d] at positions start..start+T-1; kcache/vcache
// [positions][KV][row] (row >= d: padded rows); query t sees keys 0..start+t. Out [T][H][d].
inline std::vector<float> attention(const std::vector<float>& q, const std::vector<float>& kc,
                                    const std::vector<float>& vc, uint32_t T, uint32_t H, uint32_t KV, uint32_t d,
                                    uint32_t row, uint32_t start) {
  std::vector<float> out(size_t(T) * H * d);
  const double scale = 1.0 / std::sqrt(double(d));
  for (uint32_t t = 0; t < T; t++)
    for (uint32_t h = 0; h < H; h++) {
      const uint32_t kvh = h / (H / KV), L = start + t + 1;
      const float* qv = &q[(size_t(t) * H + h) * d];
      std::vector<double> s(L);
      double m = -1e300;
      for (uint32_t j = 0; j < L; j++) {
        const float* kv = &kc[(size_t(j) * KV + kvh) * row];
        double dot = 0;
        for (uint32_t i = 0; i < d; i++) dot += double(qv[i]) * kv[i];
        s[j] = dot * scale;
        m = std::max(m, s[j]);
      }
      double sum = 0;
      for (auto& v : s) sum += (v = std::exp(v - m));
      for (uint32_t i = 0; i < d; i++) {
        double acc = 0;
        for (uint32_t j = 0; j < L; j++) acc += s[j] * vc[(size_t(j) * KV + kvh) * row + i];
        out[(size_t(t) * H + h) * d + i] = float(acc / sum);
      }
    }
  return out;
}

// LFM2 short conv over T tokens. in [T][3*hidden] = (B | C | xs); taps [hidden][3] (tap 2 = the
// current token); state [hidden][2] = the previous two bx values (oldest first), updated in place.
inline std::vector<float> short_conv(const std::vector<float>& in, const std::vector<float>& taps,
                                     std::vector<float>& state, uint32_t T, uint32_t hidden) {
  std::vector<float> out(size_t(T) * hidden);
  for (uint32_t c = 0; c < hidden; c++) {
    double s0 = state[c * 2], s1 = state[c * 2 + 1];
    for (uint32_t t = 0; t < T; t++) {
      const float* row = &in[size_t(t) * 3 * hidden];
      double bx = double(row[c]) * row[2 * hidden + c];
      double conv = taps[c * 3] * s0 + taps[c * 3 + 1] * s1 + taps[c * 3 + 2] * bx;
      out[size_t(t) * hidden + c] = float(row[hidden + c] * conv);
      s0 = s1;
      s1 = bx;
    }
    state[c * 2] = float(s0);
    state[c * 2 + 1] = float(s1);
  }
  return out;
}

// gu [T][2*ffn] (gate | up) -> silu(gate) * up, [T][ffn].
inline std::vector<float> silu_mul(const std::vector<float>& gu, uint32_t T, uint32_t ffn) {
  std::vector<float> out(size_t(T) * ffn);
  for (uint32_t t = 0; t < T; t++)
    for (uint32_t i = 0; i < ffn; i++) {
      double g = gu[size_t(t) * 2 * ffn + i], u = gu[size_t(t) * 2 * ffn + ffn + i];
      out[size_t(t) * ffn + i] = float(g / (1.0 + std::exp(-g)) * u);
    }
  return out;
}

}  // namespace ember::reference
