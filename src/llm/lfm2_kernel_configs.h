// The configurations of the LFM2 graph's small kernels for one shape and one set of kernel
// choices, shared by the sequence model (lfm2_model.cpp) and the batched decoder (lfm2_batch.cpp)
// so the two cannot drift apart.
#pragma once

#include "formats/llm_runtime.h"
#include "kernels/attention.h"
#include "kernels/kv_write.h"
#include "kernels/qk_norm_rope_kv.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "llm/kernel_choice.h"

namespace ember::llm {

struct Lfm2KernelConfigs {
  kernels::RmsNormConfig norm;            // a hidden row
  kernels::RmsNormConfig q_norm, k_norm;  // per head of q / k, in place in the fused qkv rows
  kernels::RopeConfig rope;               // q and k of the qkv rows
  kernels::KvWriteConfig kv_write;        // k and v of the qkv rows into the caches
  kernels::AttentionConfig attention;     // q of the qkv rows over the caches
  kernels::AttentionConfig attention_decode;  // the same, with the q/k norms + RoPE + KV append where qk_in_attention
  kernels::QkNormRopeKvConfig qk_norm_rope_kv;  // q_norm + k_norm + rope + kv_write in one kernel
};

Lfm2KernelConfigs lfm2_kernel_configs(const formats::LlmShape& shape, const KernelChoices& choices);

}  // namespace ember::llm
