// CPU reference for CLIP's text model (transformers' CLIPTextModel last_hidden_state), written from
// docs/trellis-text-encoder.md with plain loops (double accumulators) on dequantized weights: the
// oracle for src/trellis/text_encoder.cpp, independent of it and of the kernels.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "formats/clip_text_config.h"

namespace ember::reference {

// x * sigmoid(1.702 x)
float quick_gelu(float x);

// Causal softmax attention of one sequence: q, k, v rows [n][stride] at offsets + head*64;
// query i sees keys 0..i. out [n][heads*64].
std::vector<float> causal_attention(const std::vector<float>& qkv, int64_t n, int64_t stride, int64_t q_off, int64_t k_off,
                                    int64_t v_off, int64_t heads, double scale);

// Module outputs by path ("text_model.embeddings", "text_model.encoder.layers.3",
// "text_model.final_layer_norm" = last_hidden_state), each [ids.size()][context][hidden].
using ClipActivations = std::map<std::string, std::vector<float>>;

// last_hidden_state [B][n][hidden] for B sequences of n ids each (n <= max_position_embeddings);
// `activations`, when given, receives every module output.
std::vector<float> clip_text_forward(const formats::ClipTextConfig& c, const std::map<std::string, std::vector<float>>& w,
                                     const std::vector<std::vector<int32_t>>& ids, ClipActivations* activations = nullptr);

}  // namespace ember::reference
