#include "llm/lfm2_kernel_configs.h"

namespace ember::llm {

Lfm2KernelConfigs lfm2_kernel_configs(const formats::LlmShape& s, const KernelChoices& choices) {
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  const uint32_t H = u32(s.hidden), D = u32(s.head_dim);
  const uint32_t Q = u32(s.q_rows()), KV = u32(s.kv_rows()), QKV = u32(s.qkv_rows());
  const float eps = static_cast<float>(s.eps());
  const bool sg = choices.subgroups;
  Lfm2KernelConfigs c;
  c.norm = {.cols = H, .eps = eps, .subgroups = sg};
  c.q_norm = {.cols = D, .eps = eps, .heads = u32(s.heads), .token_stride = QKV, .offset = 0, .in_place = true, .subgroups = sg, .workgroup = 64};
  c.k_norm = {.cols = D, .eps = eps, .heads = u32(s.kv_heads), .token_stride = QKV, .offset = Q, .in_place = true, .subgroups = sg, .workgroup = 64};
  c.rope = {.heads = u32(s.heads), .kv_heads = u32(s.kv_heads), .head_dim = D, .q_stride = QKV, .q_offset = 0, .k_stride = QKV, .k_offset = Q,
            .shared_qk = true};
  c.kv_write = {.kv_heads = u32(s.kv_heads), .head_dim = D, .padding = choices.padding, .k_stride = QKV, .k_offset = Q, .v_stride = QKV,
                .v_offset = Q + KV};
  c.attention = {.heads = u32(s.heads), .kv_heads = u32(s.kv_heads), .head_dim = D, .padding = choices.padding, .q_stride = QKV, .q_offset = 0,
                 .subgroups = sg, .direct_workgroup = choices.flash_direct_workgroup};
  c.attention_decode = c.attention;
  c.attention_decode.norm_rope_kv = choices.qk_in_attention;
  c.attention_decode.k_offset = Q;
  c.attention_decode.v_offset = Q + KV;
  c.attention_decode.eps = eps;
  c.qk_norm_rope_kv = {.heads = u32(s.heads), .kv_heads = u32(s.kv_heads), .head_dim = D, .padding = choices.padding, .stride = QKV,
                       .q_offset = 0, .k_offset = Q, .v_offset = Q + KV, .eps = eps};
  return c;
}

}  // namespace ember::llm
