// LayerNorm (with or without affine) fused with adaLN shift/scale or a SiLU (src/kernels/layer_norm.wgsl).
#pragma once

#include "kernels/dispatch.h"

namespace ember::kernels {

struct LayerNormArgs {
  const gpu::Buffer* x;  // f32 [rows][channels]
  const gpu::Buffer* y;  // f32 [rows][channels]
  uint32_t rows, channels;
  float eps;
  const gpu::Buffer* weight = nullptr;  // f16 [channels] with bias: affine
  const gpu::Buffer* bias = nullptr;
  // Modulation: y = n * (1 + mod[b][scale_offset + c]) + mod[b][shift_offset + c], b = row / tokens_per_batch.
  const gpu::Buffer* mods = nullptr;
  uint32_t tokens_per_batch = 1, mod_stride = 0, shift_offset = 0, scale_offset = 0;
  bool silu = false;  // y = silu(y) after the affine / modulation
  bool subgroups = false;
  // With subgroups (of at least 8 lanes): 8 lanes per row, the row in registers, where channels
  // is a multiple of 32 up to 1024 (and modulation offsets multiples of 4).
  bool row_lanes = true;
  uint32_t workgroup = 256;  // power of two
};

Dispatch layer_norm(gpu::KernelCache& kernels, const LayerNormArgs& args, const std::string& region = "");

}  // namespace ember::kernels
