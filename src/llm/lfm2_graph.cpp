#include "llm/lfm2_graph.h"

#include "common/error.h"
#include "formats/llm_layout.h"

namespace ember::llm {

namespace {
uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }
}  // namespace

std::vector<Lfm2MatrixShape> lfm2_matrix_shapes(const formats::LlmShape& s) {
  const uint32_t H = u32(s.hidden), F = u32(s.ffn), V = u32(s.vocab), Q = u32(s.q_rows()), QKV = u32(s.qkv_rows());
  return {{"conv_in_proj", 3 * H, H, false, false, true},   {"conv_out_proj", H, H, true, false, false},
          {"attn_qkv", QKV, H, false, false, true},         {"attn_o_proj", H, Q, true, false, false},
          {"mlp_gate_up", 2 * F, H, false, false, true},    {"mlp_down", H, F, true, false, false},
          {"head", V, H, false, true, true}};
}

const Lfm2MatrixShape& lfm2_matrix_shape(const std::vector<Lfm2MatrixShape>& shapes, const std::string& key) {
  for (const auto& m : shapes)
    if (key == m.key) return m;
  throw Error("no LFM2 matrix shape '" + key + "'", "lfm2 graph");
}

Lfm2Graph lfm2_graph(const formats::LlmShape& s) {
  Lfm2Graph g;
  auto op = [&](Lfm2Role role, std::string path, int layer, std::string weight = {}, const char* key = nullptr) {
    g.ops.push_back({role, std::move(path), layer, std::move(weight), key});
  };
  op(Lfm2Role::embed, "model.embed_tokens", -1, "embed");
  for (int i = 0; i < static_cast<int>(s.layers()); i++) {
    g.layer_begin.push_back(g.ops.size());
    const std::string m = "model.layers." + std::to_string(i) + ".", p = formats::layer_prefix(i);
    if (s.layer_types[i] == formats::LayerType::Conv) {
      op(Lfm2Role::op_norm, m + "operator_norm", i, p + "conv.in_proj.norm");
      op(Lfm2Role::mix_in, m + "conv.in_proj", i, p + "conv.in_proj", "conv_in_proj");
      op(Lfm2Role::conv, m + "conv.conv", i, p + "conv.core.taps");
      op(Lfm2Role::mix_out, m + "conv.out_proj", i, p + "conv.out_proj", "conv_out_proj");
    } else {
      op(Lfm2Role::op_norm, m + "operator_norm", i, p + "attn.qkv.norm");
      // q_proj, k_proj and v_proj are one stacked matrix in the pack (docs/formats.md).
      op(Lfm2Role::mix_in, m + "self_attn.qkv_proj", i, p + "attn.qkv", "attn_qkv");
      op(Lfm2Role::q_norm, m + "self_attn.q_layernorm", i, p + "attn.qkv.q_norm");
      op(Lfm2Role::k_norm, m + "self_attn.k_layernorm", i, p + "attn.qkv.k_norm");
      op(Lfm2Role::rope, m + "self_attn.rope", i);
      op(Lfm2Role::kv_append, m + "self_attn.kv_cache", i);
      op(Lfm2Role::attention, m + "self_attn.attention", i);
      op(Lfm2Role::mix_out, m + "self_attn.out_proj", i, p + "attn.o_proj", "attn_o_proj");
    }
    op(Lfm2Role::ffn_norm, m + "ffn_norm", i, p + "mlp.gate_up.norm");
    op(Lfm2Role::gate_up, m + "feed_forward.w1_w3", i, p + "mlp.gate_up", "mlp_gate_up");  // w1 then w3, stacked
    op(Lfm2Role::silu_mul, m + "feed_forward.silu_mul", i);
    op(Lfm2Role::down, m + "feed_forward.w2", i, p + "mlp.down", "mlp_down");
  }
  g.head_begin = g.ops.size();
  g.layer_begin.push_back(g.head_begin);
  op(Lfm2Role::final_norm, "model.embedding_norm", -1, "head.norm");
  op(Lfm2Role::head, "lm_head", -1, "head", "head");
  return g;
}

}  // namespace ember::llm
