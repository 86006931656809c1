#include "trellis/ss_flow_synth.h"

#include <cmath>

#include "trellis/flow_sampler.h"

namespace ember::trellis {

std::vector<float> position_embedding(const SsFlowConfig& c) {
  // Per axis: freqs f_i = 1 / 10000^(i / F) with F = channels / 6, [sin(p f), cos(p f)]; axes d,h,w
  // concatenated, zero padded to the width.
  const int64_t R = c.resolution, C = c.model_channels, F = C / 6;
  std::vector<float> pos(size_t(c.tokens() * C), 0.0f);
  for (int64_t n = 0; n < c.tokens(); n++) {
    const int64_t coord[3] = {n / (R * R), (n / R) % R, n % R};
    for (int a = 0; a < 3; a++)
      for (int64_t i = 0; i < F; i++) {
        const double f = 1.0 / std::pow(10000.0, double(i) / double(F));
        pos[size_t(n * C + a * 2 * F + i)] = float(std::sin(coord[a] * f));
        pos[size_t(n * C + a * 2 * F + F + i)] = float(std::cos(coord[a] * f));
      }
  }
  return pos;
}

MemoryTensors synth_ss_flow(const SsFlowConfig& c, uint64_t seed) {
  MemoryTensors m;
  uint64_t stream = seed * 1000003ull;
  auto normal = [&](size_t n, double scale, double mean = 0.0) {
    auto v = gaussian_noise(stream++, n);
    for (auto& x : v) x = float(mean + scale * x);
    return v;
  };
  auto lin = [&](const std::string& name, int64_t out, int64_t in, double gain = 1.0) {
    m.tensors[name + ".weight"] = quantize_matrix(normal(size_t(out * in), gain / std::sqrt(double(in))), out, in);
    m.tensors[name + ".bias"] = raw_f16(normal(size_t(out), 0.02), {out});
  };
  const int64_t C = c.model_channels, H = c.num_heads, F = c.mlp_channels();
  lin("input_layer", C, c.in_channels);
  lin("out_layer", c.out_channels, C);
  lin("t_embedder.mlp.0", C, SsFlowConfig::kFreqDim);
  lin("t_embedder.mlp.2", C, C);
  m.tensors["pos_emb"] = quantize_matrix(position_embedding(c), c.tokens(), C);
  for (int64_t b = 0; b < c.num_blocks; b++) {
    const std::string p = "blocks." + std::to_string(b) + ".";
    lin(p + "adaLN_modulation.1", 6 * C, C, 0.5);
    lin(p + "self_attn.to_qkv", 3 * C, C);
    lin(p + "self_attn.to_out", C, C);
    m.tensors[p + "self_attn.q_rms_norm.gamma"] = raw_f16(normal(size_t(H * 64), 0.1, 1.0), {H, 64});
    m.tensors[p + "self_attn.k_rms_norm.gamma"] = raw_f16(normal(size_t(H * 64), 0.1, 1.0), {H, 64});
    lin(p + "cross_attn.to_q", C, C);
    lin(p + "cross_attn.to_kv", 2 * C, c.cond_channels);
    lin(p + "cross_attn.to_out", C, C);
    m.tensors[p + "norm2.weight"] = raw_f16(normal(size_t(C), 0.1, 1.0), {C});
    m.tensors[p + "norm2.bias"] = raw_f16(normal(size_t(C), 0.02), {C});
    lin(p + "mlp.mlp.0", F, C);
    lin(p + "mlp.mlp.2", C, F);
  }
  return m;
}

}  // namespace ember::trellis
