// Plain CPU forward of an LFM2 model (transformers' Lfm2ForCausalLM semantics, docs/models.md), on
// dequantized f32 weights, one token at a time, in double-precision accumulation. The oracle the
// GPU engine is checked against; written independently of src/llm.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ember::reference {

struct Lfm2Shape {
  std::vector<bool> attention;  // per layer: true = attention, false = conv
  int hidden = 0, ffn = 0, vocab = 0, heads = 0, kv_heads = 0, head_dim = 0, conv_cache = 3;
  double eps = 1e-5;
};

struct Lfm2Layer {
  std::vector<float> operator_norm;  // [hidden]
  // conv layers
  std::vector<float> in_proj;   // [3*hidden][hidden]: rows B, C, xs
  std::vector<float> out_proj;  // [hidden][hidden]
  std::vector<float> taps;      // [hidden][conv_cache], last tap = current token
  // attention layers
  std::vector<float> qkv;       // [(heads + 2*kv_heads)*head_dim][hidden]: q, k, v rows
  std::vector<float> o_proj;    // [hidden][heads*head_dim]
  std::vector<float> q_norm, k_norm;  // [head_dim]
  // every layer
  std::vector<float> ffn_norm;  // [hidden]
  std::vector<float> gate_up;   // [2*ffn][hidden]: gate rows then up rows
  std::vector<float> down;      // [hidden][ffn]
};

struct Lfm2Weights {
  Lfm2Shape shape;
  std::vector<Lfm2Layer> layers;
  std::vector<float> embed;       // [vocab][hidden], tied with the head
  std::vector<float> final_norm;  // [hidden]
  std::vector<float> rope_cos, rope_sin;  // [positions][head_dim/2]
  int rope_positions = 0;
};

// What one module computed for the token of a step, named by transformers' module path as a
// forward hook there sees it: "model.embed_tokens", "model.layers.<i>.operator_norm",
// "model.layers.<i>.conv" or ".self_attn" (the mixer's output, before the residual add),
// "model.layers.<i>.self_attn.q_layernorm" / ".k_layernorm" (every head, before RoPE),
// "model.layers.<i>.ffn_norm", "model.layers.<i>.feed_forward", "model.layers.<i>" (the layer's
// output), "model.embedding_norm", "lm_head" (the logits).
using Lfm2Tap = std::function<void(const std::string& module, std::span<const double> value)>;

class Lfm2Reference {
 public:
  explicit Lfm2Reference(const Lfm2Weights& w);
  // Feeds one token at the next position; returns the logits [vocab]. `tap`, when set, gets every
  // module's output of this step (Lfm2Tap).
  std::vector<float> step(uint32_t token, const Lfm2Tap& tap = {});
  int position() const { return pos_; }
  void reset();

 private:
  const Lfm2Weights& w_;
  int pos_ = 0;
  std::vector<std::vector<double>> conv_state_;            // per layer [hidden][conv_cache]
  std::vector<std::vector<float>> k_cache_, v_cache_;      // per layer [pos][kv_heads*head_dim]
};

}  // namespace ember::reference
