#include "reference/clip_text_reference.h"

#include <cmath>
#include <stdexcept>

#include "reference/ss_flow_reference.h"

namespace ember::reference {

float quick_gelu(float x) { return float(double(x) / (1.0 + std::exp(-1.702 * double(x)))); }

std::vector<float> causal_attention(const std::vector<float>& qkv, int64_t n, int64_t stride, int64_t q_off, int64_t k_off,
                                    int64_t v_off, int64_t heads, double scale) {
  constexpr int64_t D = 64;
  std::vector<float> out(size_t(n * heads * D));
  std::vector<double> s(static_cast<size_t>(n));
  for (int64_t h = 0; h < heads; h++)
    for (int64_t i = 0; i < n; i++) {
      double m = -INFINITY;
      for (int64_t j = 0; j <= i; j++) {
        double dot = 0;
        for (int64_t c = 0; c < D; c++)
          dot += double(qkv[size_t(i * stride + q_off + h * D + c)]) * qkv[size_t(j * stride + k_off + h * D + c)];
        s[size_t(j)] = dot * scale;
        m = std::max(m, s[size_t(j)]);
      }
      double l = 0;
      for (int64_t j = 0; j <= i; j++) l += (s[size_t(j)] = std::exp(s[size_t(j)] - m));
      for (int64_t c = 0; c < D; c++) {
        double acc = 0;
        for (int64_t j = 0; j <= i; j++) acc += s[size_t(j)] * qkv[size_t(j * stride + v_off + h * D + c)];
        out[size_t(i * heads * D + h * D + c)] = float(acc / l);
      }
    }
  return out;
}

std::vector<float> clip_text_forward(const formats::ClipTextConfig& c, const std::map<std::string, std::vector<float>>& w,
                                     const std::vector<std::vector<int32_t>>& ids, ClipActivations* acts) {
  const int64_t C = c.hidden_size, F = c.intermediate_size, H = c.num_attention_heads;
  auto W = [&](const std::string& name) -> const std::vector<float>& {
    auto it = w.find(name);
    if (it == w.end()) throw std::runtime_error("reference: no tensor " + name);
    return it->second;
  };
  std::vector<float> result;
  auto record = [&](const std::string& name, const std::vector<float>& v) {
    if (!acts) return;
    auto& dst = (*acts)[name];
    dst.insert(dst.end(), v.begin(), v.end());
  };
  for (const auto& seq : ids) {
    const int64_t n = int64_t(seq.size());
    if (n > c.max_position_embeddings) throw std::runtime_error("reference: sequence longer than the position table");
    // Embeddings: token row + position row.
    std::vector<float> x(size_t(n * C));
    const auto& tok = W("text_model.embeddings.token_embedding.weight");
    const auto& pos = W("text_model.embeddings.position_embedding.weight");
    for (int64_t t = 0; t < n; t++) {
      if (seq[size_t(t)] < 0 || seq[size_t(t)] >= c.vocab_size) throw std::runtime_error("reference: id out of range");
      for (int64_t k = 0; k < C; k++)
        x[size_t(t * C + k)] = float(double(tok[size_t(seq[size_t(t)] * C + k)]) + pos[size_t(t * C + k)]);
    }
    record("text_model.embeddings", x);
    for (int64_t l = 0; l < c.num_hidden_layers; l++) {
      const std::string p = "text_model.encoder.layers." + std::to_string(l) + ".";
      // Pre-LayerNorm self-attention with the causal mask, residual.
      auto h = layer_norm(x, n, C, c.layer_norm_eps, W(p + "layer_norm1.weight"), W(p + "layer_norm1.bias"));
      auto q = linear(h, n, C, W(p + "self_attn.q_proj.weight"), W(p + "self_attn.q_proj.bias"), C);
      auto k = linear(h, n, C, W(p + "self_attn.k_proj.weight"), W(p + "self_attn.k_proj.bias"), C);
      auto v = linear(h, n, C, W(p + "self_attn.v_proj.weight"), W(p + "self_attn.v_proj.bias"), C);
      std::vector<float> qkv(size_t(n * 3 * C));
      for (int64_t t = 0; t < n; t++)
        for (int64_t j = 0; j < C; j++) {
          qkv[size_t(t * 3 * C + j)] = q[size_t(t * C + j)];
          qkv[size_t(t * 3 * C + C + j)] = k[size_t(t * C + j)];
          qkv[size_t(t * 3 * C + 2 * C + j)] = v[size_t(t * C + j)];
        }
      auto att = causal_attention(qkv, n, 3 * C, 0, C, 2 * C, H, 1.0 / std::sqrt(double(c.head_dim())));
      auto o = linear(att, n, C, W(p + "self_attn.out_proj.weight"), W(p + "self_attn.out_proj.bias"), C);
      record(p + "self_attn", o);
      for (size_t i = 0; i < x.size(); i++) x[i] = float(double(x[i]) + o[i]);
      // Pre-LayerNorm MLP (fc1, quick_gelu, fc2), residual.
      h = layer_norm(x, n, C, c.layer_norm_eps, W(p + "layer_norm2.weight"), W(p + "layer_norm2.bias"));
      auto f = linear(h, n, C, W(p + "mlp.fc1.weight"), W(p + "mlp.fc1.bias"), F);
      for (auto& e : f) e = quick_gelu(e);
      auto m = linear(f, n, F, W(p + "mlp.fc2.weight"), W(p + "mlp.fc2.bias"), C);
      for (size_t i = 0; i < x.size(); i++) x[i] = float(double(x[i]) + m[i]);
      record("text_model.encoder.layers." + std::to_string(l), x);
    }
    auto y = layer_norm(x, n, C, c.layer_norm_eps, W("text_model.final_layer_norm.weight"), W("text_model.final_layer_norm.bias"));
    record("text_model.final_layer_norm", y);
    result.insert(result.end(), y.begin(), y.end());
  }
  return result;
}

}  // namespace ember::reference
