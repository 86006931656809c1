// Hugging Face LFM2 checkpoints (transformers' Lfm2ForCausalLM): config.json fields and the
// state-dict tensor names and shapes (docs/models.md "Reading Hugging Face LFM2 checkpoints").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "formats/json_text.h"
#include "formats/llm_runtime.h"

namespace ember::formats {

struct Lfm2Config {
  std::vector<LayerType> layer_types;  // from layer_types ("conv" / "full_attention")
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // as stored: see ffn()
  bool block_auto_adjust_ff_dim = true;
  std::optional<double> block_ffn_dim_multiplier;
  int64_t block_multiple_of = 256;
  int64_t num_attention_heads = 0, num_key_value_heads = 0;
  int64_t head_dim = 0;  // hidden_size / num_attention_heads unless config.json has head_dim
  int64_t vocab_size = 0;
  int64_t conv_L_cache = 3;
  bool conv_bias = false;
  double norm_eps = 1e-5;
  double rope_theta = 1000000.0;
  int64_t max_position_embeddings = 128000;
  bool tie_word_embeddings = true;

  // The MLP width transformers builds: with block_auto_adjust_ff_dim, int(2*intermediate/3), and
  // where block_ffn_dim_multiplier is set (absent from config.json reads as 1.0), that times the
  // multiplier (truncated), rounded up to block_multiple_of.
  int64_t ffn() const;
};

// Reads config.json's object; missing or mistyped fields throw an ember::Error naming `where`.
Lfm2Config parse_lfm2_config(const OrderedJson& j, const std::string& where);
OrderedJson to_json(const Lfm2Config& c, const std::string& torch_dtype);

// Named presets for `ember synth`: "seed" (seed 000's shape) and "tiny" (fast tests).
Lfm2Config lfm2_preset(const std::string& name);

struct HfTensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  enum Role { Matrix, Embedding, Norm, ConvTaps } role;
};
// Every tensor transformers expects for this config, embeddings first, then layer by layer.
// `ffn` overrides c.ffn() (the packer trusts the tensors' width and checks it separately).
std::vector<HfTensorSpec> lfm2_tensor_specs(const Lfm2Config& c, int64_t ffn = -1);

}  // namespace ember::formats
