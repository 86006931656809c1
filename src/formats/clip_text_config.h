// CLIP's text model (transformers' CLIPTextModel, the TRELLIS-text conditioning encoder): its
// hyper-parameters as config.json states them, its state-dict names and shapes, and random
// weights for synthetic checkpoints. docs/trellis-text-encoder.md has the semantics.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::formats {

struct ClipTextConfig {
  // transformers' CLIPTextConfig fields; the defaults are openai/clip-vit-large-patch14's text model.
  int64_t vocab_size = 49408;
  int64_t hidden_size = 768;
  int64_t intermediate_size = 3072;
  int64_t projection_dim = 768;  // unused by the text model's last_hidden_state; kept for config.json
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t max_position_embeddings = 77;
  double layer_norm_eps = 1e-5;
  std::string hidden_act = "quick_gelu";
  int64_t pad_token_id = 1, bos_token_id = 49406, eos_token_id = 49407;

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // config.json that transformers' CLIPTextModel.from_pretrained reads; `dtype` ("float32" |
  // "float16" | "bfloat16") is what the weights file holds.
  nlohmann::json to_json(const std::string& dtype = "float32") const;
};

// openai/clip-vit-large-patch14's text model (TRELLIS-text's text_cond_model).
ClipTextConfig clip_vit_l14_text_config();
// A tiny shape for fast tests: 2 layers, 2 heads of 64, MLP 336 (not a multiple of the 64-column
// group), vocabulary 1000 (not a multiple of the 16-row tile), 77 positions.
ClipTextConfig clip_tiny_text_config();

// A CLIPTextConfig (model_type "clip_text_model") or a full CLIPConfig ("clip": its text_config);
// missing fields take transformers' defaults. Anything else is an ember::Error naming `where`.
ClipTextConfig parse_clip_text_config(const nlohmann::json& j, const std::string& where);
// What ember implements: heads of 64 channels, quick_gelu, positive sizes. Throws ember::Error.
void check_clip_text_config(const ClipTextConfig& c, const std::string& where);

// State-dict names (CLIPTextModel: "text_model.embeddings.token_embedding.weight", ...) -> shapes
// (Linear weights [out, in]).
std::map<std::string, std::vector<int64_t>> clip_text_tensor_shapes(const ClipTextConfig& c);

// Random weights under those names, deterministic for a seed: every tensor drawn afresh, LayerNorm
// weights 1 + N(0, 0.1^2) and biases N(0, 0.05^2) (so a swapped or missing affine shows), Linear
// weights N(0, 1/in), biases N(0, 0.02^2), embeddings N(0, 1) (tokens) and N(0, 0.5^2) (positions).
std::map<std::string, std::vector<float>> synth_clip_text_weights(const ClipTextConfig& c, uint64_t seed);

}  // namespace ember::formats
