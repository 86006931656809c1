#include "reference/lfm2_reference.h"

#include <cmath>
#include <stdexcept>

namespace ember::reference {
namespace {

using Vec = std::vector<double>;

Vec matvec(const std::vector<float>& w, const Vec& x, int rows) {
  const size_t cols = x.size();
  Vec y(rows, 0.0);
  for (int r = 0; r < rows; r++) {
    double s = 0;
    const float* row = &w[size_t(r) * cols];
    for (size_t c = 0; c < cols; c++) s += double(row[c]) * x[c];
    y[r] = s;
  }
  return y;
}

Vec rmsnorm(const Vec& x, const std::vector<float>& weight, double eps, size_t offset = 0, size_t n = 0) {
  if (n == 0) n = x.size();
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += x[offset + i] * x[offset + i];
  double inv = 1.0 / std::sqrt(ss / n + eps);
  Vec y(n);
  for (size_t i = 0; i < n; i++) y[i] = x[offset + i] * inv * weight[i];
  return y;
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }

}  // namespace

Lfm2Reference::Lfm2Reference(const Lfm2Weights& w) : w_(w) { reset(); }

void Lfm2Reference::reset() {
  pos_ = 0;
  const auto& s = w_.shape;
  conv_state_.assign(s.attention.size(), Vec(size_t(s.hidden) * s.conv_cache, 0.0));
  k_cache_.assign(s.attention.size(), {});
  v_cache_.assign(s.attention.size(), {});
}

std::vector<float> Lfm2Reference::step(uint32_t token, const Lfm2Tap& tap_fn) {
  auto tap = [&](const std::string& module, const Vec& v) {
    if (tap_fn) tap_fn(module, v);
  };
  const auto& s = w_.shape;
  const int H = s.hidden, D = s.head_dim, KV = s.kv_heads * D, Q = s.heads * D, L = s.conv_cache;
  if (static_cast<int>(token) >= s.vocab) throw std::out_of_range("token id beyond the vocabulary");
  if (pos_ >= w_.rope_positions) throw std::out_of_range("position beyond the rope table");
  Vec x(H);
  for (int i = 0; i < H; i++) x[i] = w_.embed[size_t(token) * H + i];
  tap("model.embed_tokens", x);

  for (size_t li = 0; li < s.attention.size(); li++) {
    const Lfm2Layer& layer = w_.layers[li];
    const std::string path = "model.layers." + std::to_string(li);
    Vec h = rmsnorm(x, layer.operator_norm, s.eps);
    tap(path + ".operator_norm", h);
    if (!s.attention[li]) {
      Vec bcx = matvec(layer.in_proj, h, 3 * H);
      Vec& state = conv_state_[li];
      Vec y(H);
      for (int c = 0; c < H; c++) {
        for (int k = 0; k + 1 < L; k++) state[size_t(c) * L + k] = state[size_t(c) * L + k + 1];
        state[size_t(c) * L + L - 1] = bcx[c] * bcx[2 * H + c];  // B * xs
        double conv = 0;
        for (int k = 0; k < L; k++) conv += state[size_t(c) * L + k] * layer.taps[size_t(c) * L + k];
        y[c] = bcx[H + c] * conv;  // C * conv
      }
      Vec o = matvec(layer.out_proj, y, H);
      tap(path + ".conv", o);
      for (int i = 0; i < H; i++) x[i] += o[i];
    } else {
      Vec qkv = matvec(layer.qkv, h, Q + 2 * KV);
      Vec q(Q), k(KV);
      for (int hd = 0; hd < s.heads; hd++) {
        Vec n = rmsnorm(qkv, layer.q_norm, s.eps, size_t(hd) * D, D);
        for (int i = 0; i < D; i++) q[size_t(hd) * D + i] = n[i];
      }
      for (int hd = 0; hd < s.kv_heads; hd++) {
        Vec n = rmsnorm(qkv, layer.k_norm, s.eps, size_t(Q) + size_t(hd) * D, D);
        for (int i = 0; i < D; i++) k[size_t(hd) * D + i] = n[i];
      }
      tap(path + ".self_attn.q_layernorm", q);
      tap(path + ".self_attn.k_layernorm", k);
      auto rope = [&](Vec& v, int nheads) {  // rotate-half at position pos_
        for (int hd = 0; hd < nheads; hd++) {
          double* p = &v[size_t(hd) * D];
          for (int i = 0; i < D / 2; i++) {
            double c = w_.rope_cos[size_t(pos_) * (D / 2) + i], sn = w_.rope_sin[size_t(pos_) * (D / 2) + i];
            double a = p[i], b = p[i + D / 2];
            p[i] = a * c - b * sn;
            p[i + D / 2] = b * c + a * sn;
          }
        }
      };
      rope(q, s.heads);
      rope(k, s.kv_heads);
      auto& kc = k_cache_[li];
      auto& vc = v_cache_[li];
      for (int i = 0; i < KV; i++) kc.push_back(static_cast<float>(k[i]));
      for (int i = 0; i < KV; i++) vc.push_back(static_cast<float>(qkv[size_t(Q) + KV + i]));
      const int n = pos_ + 1, group = s.heads / s.kv_heads;
      Vec attn(Q, 0.0);
      for (int hd = 0; hd < s.heads; hd++) {
        const int kvh = hd / group;
        std::vector<double> scores(n);
        double m = -1e300;
        for (int t = 0; t < n; t++) {
          double d = 0;
          for (int i = 0; i < D; i++) d += q[size_t(hd) * D + i] * kc[size_t(t) * KV + size_t(kvh) * D + i];
          scores[t] = d / std::sqrt(double(D));
          m = std::max(m, scores[t]);
        }
        double sum = 0;
        for (double& sc : scores) sum += (sc = std::exp(sc - m));
        for (int t = 0; t < n; t++)
          for (int i = 0; i < D; i++) attn[size_t(hd) * D + i] += scores[t] / sum * vc[size_t(t) * KV + size_t(kvh) * D + i];
      }
      Vec o = matvec(layer.o_proj, attn, H);
      tap(path + ".self_attn", o);
      for (int i = 0; i < H; i++) x[i] += o[i];
    }
    Vec hn = rmsnorm(x, layer.ffn_norm, s.eps);
    tap(path + ".ffn_norm", hn);
    Vec gu = matvec(layer.gate_up, hn, 2 * s.ffn);
    Vec a(s.ffn);
    for (int i = 0; i < s.ffn; i++) a[i] = silu(gu[i]) * gu[s.ffn + i];
    Vec d = matvec(layer.down, a, H);
    tap(path + ".feed_forward", d);
    for (int i = 0; i < H; i++) x[i] += d[i];
    tap(path, x);
  }
  Vec xn = rmsnorm(x, w_.final_norm, s.eps);
  tap("model.embedding_norm", xn);
  Vec logits = matvec(w_.embed, xn, s.vocab);
  tap("lm_head", logits);
  pos_++;
  return std::vector<float>(logits.begin(), logits.end());
}

}  // namespace ember::reference
