#include "reference/ss_flow_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ember::reference {
namespace {

const std::vector<float>& get(const Weights& w, const std::string& name) {
  auto it = w.find(name);
  if (it == w.end()) throw std::runtime_error("reference: missing weight " + name);
  return it->second;
}

}  // namespace

std::vector<float> linear(const std::vector<float>& x, int64_t tokens, int64_t in, const std::vector<float>& w,
                          const std::vector<float>& b, int64_t out) {
  std::vector<float> y(size_t(tokens * out));
  for (int64_t t = 0; t < tokens; t++)
    for (int64_t r = 0; r < out; r++) {
      double s = b.empty() ? 0.0 : b[size_t(r)];
      const float* xr = &x[size_t(t * in)];
      const float* wr = &w[size_t(r * in)];
      for (int64_t c = 0; c < in; c++) s += double(wr[c]) * xr[c];
      y[size_t(t * out + r)] = float(s);
    }
  return y;
}

std::vector<float> layer_norm(const std::vector<float>& x, int64_t tokens, int64_t channels, double eps,
                              const std::vector<float>& weight, const std::vector<float>& bias) {
  std::vector<float> y(x.size());
  for (int64_t t = 0; t < tokens; t++) {
    const float* xr = &x[size_t(t * channels)];
    double mean = 0, var = 0;
    for (int64_t c = 0; c < channels; c++) mean += xr[c];
    mean /= double(channels);
    for (int64_t c = 0; c < channels; c++) var += (xr[c] - mean) * (xr[c] - mean);
    var /= double(channels);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < channels; c++) {
      double v = (xr[c] - mean) * rstd;
      if (!weight.empty()) v = v * weight[size_t(c)] + bias[size_t(c)];
      y[size_t(t * channels + c)] = float(v);
    }
  }
  return y;
}

float gelu_tanh(float x) {
  const double v = x;
  return float(0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))));
}

float silu(float x) { return float(double(x) / (1.0 + std::exp(-double(x)))); }

void head_rms_norm(std::vector<float>& x, int64_t tokens, int64_t stride, int64_t offset, int64_t heads,
                   const std::vector<float>& gamma) {
  for (int64_t t = 0; t < tokens; t++)
    for (int64_t h = 0; h < heads; h++) {
      float* v = &x[size_t(t * stride + offset + h * 64)];
      double n = 0;
      for (int d = 0; d < 64; d++) n += double(v[d]) * v[d];
      const double inv = 1.0 / std::max(std::sqrt(n), 1e-12);
      for (int d = 0; d < 64; d++) v[d] = float(v[d] * inv * 8.0 * gamma[size_t(h * 64 + d)]);
    }
}

std::vector<float> attention(const std::vector<float>& q, int64_t nq, int64_t q_stride, int64_t q_off,
                             const std::vector<float>& kv, int64_t nk, int64_t kv_stride, int64_t k_off,
                             int64_t v_off, int64_t heads, double scale, int64_t head_dim) {
  std::vector<float> out(size_t(nq * heads * head_dim));
  std::vector<double> s(static_cast<size_t>(nk));
  for (int64_t h = 0; h < heads; h++)
    for (int64_t i = 0; i < nq; i++) {
      const float* qi = &q[size_t(i * q_stride + q_off + h * head_dim)];
      double m = -INFINITY;
      for (int64_t j = 0; j < nk; j++) {
        const float* kj = &kv[size_t(j * kv_stride + k_off + h * head_dim)];
        double d = 0;
        for (int c = 0; c < head_dim; c++) d += double(qi[c]) * kj[c];
        s[size_t(j)] = d * scale;
        m = std::max(m, s[size_t(j)]);
      }
      double sum = 0;
      for (int64_t j = 0; j < nk; j++) sum += (s[size_t(j)] = std::exp(s[size_t(j)] - m));
      for (int c = 0; c < head_dim; c++) {
        double o = 0;
        for (int64_t j = 0; j < nk; j++) o += s[size_t(j)] * kv[size_t(j * kv_stride + v_off + h * head_dim + c)];
        out[size_t(i * heads * head_dim + h * head_dim + c)] = float(o / sum);
      }
    }
  return out;
}

std::vector<float> timestep_frequencies(double t) {
  std::vector<float> f(256);
  const double T = 1000.0 * t;
  for (int i = 0; i < 128; i++) {
    const double g = std::exp(-std::log(10000.0) * i / 128.0);
    f[size_t(i)] = float(std::cos(T * g));
    f[size_t(128 + i)] = float(std::sin(T * g));
  }
  return f;
}

std::vector<float> ss_flow_forward(const trellis::SsFlowConfig& cfg, const Weights& w, const std::vector<float>& x,
                                   const std::vector<double>& t, const std::vector<float>& cond, int64_t ctx_tokens) {
  const int64_t B = int64_t(t.size()), N = cfg.tokens(), C = cfg.model_channels, H = cfg.num_heads;
  const int64_t Cin = cfg.in_channels, Cout = cfg.out_channels, Cc = cfg.cond_channels, F = cfg.mlp_channels();
  std::vector<float> v(size_t(B * Cout * N));
  for (int64_t b = 0; b < B; b++) {
    // Tokens: token n carries the channels of voxel n.
    std::vector<float> xt(size_t(N * Cin));
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < Cin; c++) xt[size_t(n * Cin + c)] = x[size_t((b * Cin + c) * N + n)];
    std::vector<float> h = linear(xt, N, Cin, get(w, "input_layer.weight"), get(w, "input_layer.bias"), C);
    const auto& pos = get(w, "pos_emb");
    for (size_t i = 0; i < h.size(); i++) h[i] += pos[i];

    std::vector<float> temb = linear(timestep_frequencies(t[size_t(b)]), 1, 256, get(w, "t_embedder.mlp.0.weight"),
                                     get(w, "t_embedder.mlp.0.bias"), C);
    for (auto& e : temb) e = silu(e);
    temb = linear(temb, 1, C, get(w, "t_embedder.mlp.2.weight"), get(w, "t_embedder.mlp.2.bias"), C);
    for (auto& e : temb) e = silu(e);  // every block's adaLN_modulation starts with SiLU

    const std::vector<float> ctx(cond.begin() + b * ctx_tokens * Cc, cond.begin() + (b + 1) * ctx_tokens * Cc);
    for (int64_t blk = 0; blk < cfg.num_blocks; blk++) {
      const std::string p = "blocks." + std::to_string(blk) + ".";
      const auto mod = linear(temb, 1, C, get(w, p + "adaLN_modulation.1.weight"), get(w, p + "adaLN_modulation.1.bias"), 6 * C);
      auto chunk = [&](int i, int64_t c) { return mod[size_t(i * C + c)]; };
      auto modulate = [&](std::vector<float> y, int shift, int scale) {
        for (int64_t n = 0; n < N; n++)
          for (int64_t c = 0; c < C; c++) {
            float& e = y[size_t(n * C + c)];
            e = e * (1.0f + chunk(scale, c)) + chunk(shift, c);
          }
        return y;
      };
      // Self-attention.
      auto hn = modulate(layer_norm(h, N, C, 1e-6), 0, 1);
      auto qkv = linear(hn, N, C, get(w, p + "self_attn.to_qkv.weight"), get(w, p + "self_attn.to_qkv.bias"), 3 * C);
      head_rms_norm(qkv, N, 3 * C, 0, H, get(w, p + "self_attn.q_rms_norm.gamma"));
      head_rms_norm(qkv, N, 3 * C, C, H, get(w, p + "self_attn.k_rms_norm.gamma"));
      auto att = attention(qkv, N, 3 * C, 0, qkv, N, 3 * C, C, 2 * C, H, 1.0 / 8.0);
      auto o = linear(att, N, C, get(w, p + "self_attn.to_out.weight"), get(w, p + "self_attn.to_out.bias"), C);
      for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) h[size_t(n * C + c)] += chunk(2, c) * o[size_t(n * C + c)];
      // Cross-attention (no modulation, no gate).
      hn = layer_norm(h, N, C, 1e-6, get(w, p + "norm2.weight"), get(w, p + "norm2.bias"));
      auto q = linear(hn, N, C, get(w, p + "cross_attn.to_q.weight"), get(w, p + "cross_attn.to_q.bias"), C);
      auto kv = linear(ctx, ctx_tokens, Cc, get(w, p + "cross_attn.to_kv.weight"), get(w, p + "cross_attn.to_kv.bias"), 2 * C);
      att = attention(q, N, C, 0, kv, ctx_tokens, 2 * C, 0, C, H, 1.0 / 8.0);
      o = linear(att, N, C, get(w, p + "cross_attn.to_out.weight"), get(w, p + "cross_attn.to_out.bias"), C);
      for (size_t i = 0; i < h.size(); i++) h[i] += o[i];
      // MLP.
      hn = modulate(layer_norm(h, N, C, 1e-6), 3, 4);
      auto m = linear(hn, N, C, get(w, p + "mlp.mlp.0.weight"), get(w, p + "mlp.mlp.0.bias"), F);
      for (auto& e : m) e = gelu_tanh(e);
      o = linear(m, N, F, get(w, p + "mlp.mlp.2.weight"), get(w, p + "mlp.mlp.2.bias"), C);
      for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++) h[size_t(n * C + c)] += chunk(5, c) * o[size_t(n * C + c)];
    }
    auto out = linear(layer_norm(h, N, C, 1e-5), N, C, get(w, "out_layer.weight"), get(w, "out_layer.bias"), Cout);
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < Cout; c++) v[size_t((b * Cout + c) * N + n)] = out[size_t(n * Cout + c)];
  }
  return v;
}

std::vector<double> flow_schedule(int steps, double r) {
  std::vector<double> ts(size_t(steps + 1));
  for (int i = 0; i <= steps; i++) {
    const double t = 1.0 - double(i) / steps;  // linspace(1, 0, steps + 1)
    ts[size_t(i)] = r * t / (1.0 + (r - 1.0) * t);
  }
  return ts;
}

std::vector<float> flow_sample(const trellis::SsFlowConfig& cfg, const Weights& w, const std::vector<float>& noise,
                               const std::vector<float>& cond, const std::vector<float>& neg_cond, int64_t ctx_tokens,
                               const trellis::SamplerOptions& o) {
  std::vector<float> x = noise;
  const auto ts = flow_schedule(o.steps, o.rescale_t);
  for (int i = 0; i < o.steps; i++) {
    const double t = ts[size_t(i)], t_prev = ts[size_t(i + 1)];
    auto v = ss_flow_forward(cfg, w, x, {t}, cond, ctx_tokens);
    if (o.cfg_lo <= t && t <= o.cfg_hi) {
      auto vn = ss_flow_forward(cfg, w, x, {t}, neg_cond, ctx_tokens);
      for (size_t k = 0; k < v.size(); k++) v[k] = float((1.0 + o.cfg_strength) * v[k] - o.cfg_strength * vn[k]);
    }
    for (size_t k = 0; k < x.size(); k++) x[k] = float(x[k] - (t - t_prev) * v[k]);
  }
  return x;
}

}  // namespace ember::reference
