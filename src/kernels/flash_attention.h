// Attention for head size 64: flash attention (src/kernels/flash_attention.wgsl, flash_attention_quad.wgsl) and the per-head
// RMS norm of q and k (src/kernels/head_rms_norm.wgsl).
#pragma once

#include "kernels/dispatch.h"

namespace ember::kernels {

// Strides and offsets in floats, multiples of 4. See flash_attention.wgsl for the layout.
struct FlashAttentionArgs {
  const gpu::Buffer* q;
  const gpu::Buffer* kv;  // may be the same buffer as q
  const gpu::Buffer* out;
  uint32_t batch, heads, nq, nk;
  uint32_t q_stride, q_offset, kv_stride, k_offset, v_offset, o_stride;
  float scale;
  uint32_t queries_per_workgroup = 64;  // multiple of 4 for the quad variant
  // The quad variant (flash_attention_quad.wgsl): 4 queries per lane quad, 4x the reuse of each
  // key/value load; needs subgroups (size a multiple of 4).
  bool quad = false;
  uint32_t keys_per_tile = 32;  // quad variant: keys per workgroup-memory tile (multiple of 8)
};

Dispatch flash_attention(gpu::KernelCache& kernels, const FlashAttentionArgs& args, const std::string& region = "");

struct HeadRmsNormArgs {
  const gpu::Buffer* x;  // f32 rows, normalised in place
  const gpu::Buffer* gamma_q;  // f16 [heads][64]
  const gpu::Buffer* gamma_k;
  uint32_t rows, heads, stride, q_offset, k_offset;
};

Dispatch head_rms_norm(gpu::KernelCache& kernels, const HeadRmsNormArgs& args, const std::string& region = "");

}  // namespace ember::kernels
