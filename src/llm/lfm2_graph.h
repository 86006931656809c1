// The LFM2 forward (transformers' Lfm2ForCausalLM, docs/models.md) stated once, as ops named by
// their module path ("model.layers.3.conv.in_proj"), in the order one token runs them. The
// fusion planner (lfm2_plan.h) turns this list into the dispatches of decode, prefill and the
// batched step; nothing else restates the graph. See docs/llm-graph.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/llm_runtime.h"

namespace ember::llm {

// What an op computes; executors pick bind groups by it.
enum class Lfm2Role {
  embed,       // x = embed_tokens[id]
  op_norm,     // h = rmsnorm(x) * operator_norm
  mix_in,      // conv.in_proj or self_attn q/k/v (one stacked matrix)
  conv,        // the causal short convolution with its state
  q_norm,      // self_attn.q_layernorm, per head, in place
  k_norm,      // self_attn.k_layernorm
  rope,        // RoPE on q and k
  kv_append,   // k and v into the caches
  attention,   // causal attention over the caches
  mix_out,     // conv.out_proj / self_attn.out_proj, added into x
  ffn_norm,    // h = rmsnorm(x) * ffn_norm
  gate_up,     // feed_forward.w1 and w3 (one stacked matrix)
  silu_mul,    // silu(gate) * up
  down,        // feed_forward.w2, added into x
  final_norm,  // model.embedding_norm (the final norm, despite its name)
  head,        // lm_head (tied to embed_tokens)
};

// A matrix shape of the graph (decode and prefill kernels are configured once per shape).
struct Lfm2MatrixShape {
  const char* key;  // "conv_in_proj", ..., "head": the candidate's shape key
  uint32_t rows, cols;
  bool accumulate;   // y += W x: adds into the residual stream
  bool asymmetric;   // zero points (the head)
  bool reads_norm;   // its input is a norm of x
};

struct Lfm2Op {
  Lfm2Role role;
  std::string path;  // transformers module path
  int layer = -1;    // -1: before or after the layers
  std::string weight;  // the pack section it reads ("L3.conv.in_proj", "L3.mlp.gate_up.norm"); empty: none
  const char* shape_key = nullptr;  // matrices: the key of lfm2_matrix_shapes
};

struct Lfm2Graph {
  std::vector<Lfm2Op> ops;
  // ops[layer_begin[i] .. layer_begin[i + 1]) are layer i's; ops before layer_begin[0] embed, the
  // rest after the last layer are the head.
  std::vector<size_t> layer_begin;
  size_t head_begin = 0;
};

Lfm2Graph lfm2_graph(const formats::LlmShape& shape);
// Every matrix shape of an LFM2 model of this shape, in one order.
std::vector<Lfm2MatrixShape> lfm2_matrix_shapes(const formats::LlmShape& shape);
const Lfm2MatrixShape& lfm2_matrix_shape(const std::vector<Lfm2MatrixShape>& shapes, const std::string& key);

}  // namespace ember::llm
