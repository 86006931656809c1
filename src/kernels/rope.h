// Rotate-half RoPE in place on q and k (rope.wgsl). The position of token 0 is read from the step
// buffer (StepParams.start, a storage buffer, see step.h).
#pragma once

#include <cstdint>

#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace ember::kernels {

struct RopeConfig {
  uint32_t heads = 0, kv_heads = 0, head_dim = 0;  // head_dim even
  uint32_t q_stride = 0, q_offset = 0;  // elements per token / of token 0 in q; stride 0 = heads * head_dim
  uint32_t k_stride = 0, k_offset = 0;  // likewise for k; stride 0 = kv_heads * head_dim
  bool shared_qk = false;  // q and k live in one buffer (a fused qkv tensor): bind() gets k = {nullptr}
  uint32_t workgroup = 64;
};

class Rope {
 public:
  Rope(gpu::KernelCache& kernels, const RopeConfig& config);
  // With shared_qk, pass the fused buffer as q and leave k empty ({nullptr}).
  // cos/sin: f32 [maxPositions][head_dim / 2]; step: StepParams (start = position of token 0).
  gpu::BindGroup bind(gpu::Binding q, gpu::Binding k, gpu::Binding cos, gpu::Binding sin, gpu::Binding step) const;
  void record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const;

 private:
  gpu::KernelCache& kernels_;
  RopeConfig config_;
  const gpu::Kernel* kernel_;
  gpu::Buffer params_;
};

}  // namespace ember::kernels
