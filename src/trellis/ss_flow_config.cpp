#include "trellis/ss_flow_config.h"

#include <cmath>

#include "common/error.h"
#include "trellis/stage_tensors.h"

namespace ember::trellis {
namespace {

std::vector<int64_t> shape_of(const TensorSource& s, const std::string& name, size_t dims) {
  if (!s.has(name)) throw Error("tensor missing", "tensor " + name, "is this a sparseStructureFlow stage?");
  auto shape = s.get(name).shape;
  if (shape.size() != dims)
    throw Error("expected a " + std::to_string(dims) + "-d tensor, found " + std::to_string(shape.size()) + "-d", "tensor " + name);
  return shape;
}

void expect(const TensorSource& s, const std::string& name, const std::vector<int64_t>& want) {
  auto got = shape_of(s, name, want.size());
  if (got != want) {
    auto str = [](const std::vector<int64_t>& v) {
      std::string r = "[";
      for (size_t i = 0; i < v.size(); i++) r += (i ? "," : "") + std::to_string(v[i]);
      return r + "]";
    };
    throw Error("shape " + str(got) + " where " + str(want) + " was expected", "tensor " + name,
                "the stage's tensors disagree with each other: repack it");
  }
}

}  // namespace

SsFlowConfig SsFlowConfig::from_tensors(const TensorSource& s) {
  SsFlowConfig c;
  auto in = shape_of(s, "input_layer.weight", 2);
  c.model_channels = in[0];
  c.in_channels = in[1];
  c.out_channels = shape_of(s, "out_layer.weight", 2)[0];
  if (c.model_channels % kHeadDim != 0)
    throw Error("model width " + std::to_string(c.model_channels) + " is not a multiple of the head size 64", "tensor input_layer.weight");
  c.num_heads = c.model_channels / kHeadDim;
  const int64_t tokens = shape_of(s, "pos_emb", 2)[0];
  c.resolution = int64_t(std::llround(std::cbrt(double(tokens))));
  if (c.resolution * c.resolution * c.resolution != tokens)
    throw Error(std::to_string(tokens) + " position embeddings is not a cube", "tensor pos_emb");
  c.num_blocks = 0;
  while (s.has("blocks." + std::to_string(c.num_blocks) + ".norm2.weight")) c.num_blocks++;
  if (c.num_blocks == 0) throw Error("no transformer blocks", "tensor blocks.0.norm2.weight", "is this a sparseStructureFlow stage?");
  c.cond_channels = shape_of(s, "blocks.0.cross_attn.to_kv.weight", 2)[1];
  c.mlp_ratio = shape_of(s, "blocks.0.mlp.mlp.0.weight", 2)[0] / c.model_channels;
  const int64_t C = c.model_channels;
  expect(s, "pos_emb", {tokens, C});
  expect(s, "t_embedder.mlp.0.weight", {C, kFreqDim});
  expect(s, "t_embedder.mlp.2.weight", {C, C});
  expect(s, "out_layer.weight", {c.out_channels, C});
  for (int64_t b = 0; b < c.num_blocks; b++) {
    const std::string p = "blocks." + std::to_string(b) + ".";
    expect(s, p + "adaLN_modulation.1.weight", {6 * C, C});
    expect(s, p + "self_attn.to_qkv.weight", {3 * C, C});
    expect(s, p + "self_attn.q_rms_norm.gamma", {c.num_heads, kHeadDim});
    expect(s, p + "self_attn.k_rms_norm.gamma", {c.num_heads, kHeadDim});
    expect(s, p + "self_attn.to_out.weight", {C, C});
    expect(s, p + "cross_attn.to_q.weight", {C, C});
    expect(s, p + "cross_attn.to_kv.weight", {2 * C, c.cond_channels});
    expect(s, p + "cross_attn.to_out.weight", {C, C});
    expect(s, p + "mlp.mlp.0.weight", {c.mlp_channels(), C});
    expect(s, p + "mlp.mlp.2.weight", {C, c.mlp_channels()});
    expect(s, p + "norm2.weight", {C});
  }
  return c;
}

void SamplerOptions::validate() const {
  if (steps < 1) throw Error("steps must be at least 1, got " + std::to_string(steps), "--steps");
  if (!std::isfinite(cfg_strength)) throw Error("cfg strength must be finite", "--cfg");
  if (!(cfg_lo >= 0.0 && cfg_lo <= 1.0 && cfg_hi >= 0.0 && cfg_hi <= 1.0))
    throw Error("cfg interval must lie within [0, 1]", "--cfg-interval", "give LO,HI with 0 <= LO <= HI <= 1, e.g. 0.5,1.0");
  if (cfg_lo > cfg_hi) throw Error("cfg interval is reversed (LO > HI)", "--cfg-interval", "give LO,HI with LO <= HI, e.g. 0.5,1.0");
  if (!(rescale_t > 0.0) || !std::isfinite(rescale_t)) throw Error("rescale-t must be a positive number", "--rescale-t");
}

}  // namespace ember::trellis
