// The matrices of one LFM2 layer as the graph names them (lfm2_graph.h), bound in the GPU
// weights: what the sequence model and the batched decoder both multiply by.
#pragma once

#include <string>
#include <vector>

#include "kernels/q4_matrix.h"
#include "llm/lfm2_graph.h"
#include "llm/lfm2_weights.h"

namespace ember::llm {

struct Lfm2LayerWeights {
  formats::LayerType type;
  kernels::Q4Matrix mix_in, mix_out, gate_up, down;  // mix: conv in/out_proj or attn qkv/o_proj
  std::string mix_in_key, mix_out_key;               // their shape keys
};

// Layer `layer` of `graph`; `kmajor_down`: the down projection's k-major copy (the fused MLP's).
Lfm2LayerWeights lfm2_layer_weights(const Lfm2Weights& weights, const formats::LlmShape& shape, const Lfm2Graph& graph, int layer,
                                    bool kmajor_down);

}  // namespace ember::llm
