// Appends k and v of T tokens to the KV caches (kv_write.wgsl) at positions StepParams.start + t.
// Cache layout (also what the attention kernels read): f32 [maxPositions][kv_heads][row] with
// row = head_dim + padding.
#pragma once

#include <cstdint>

#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace ember::kernels {

struct KvWriteConfig {
  uint32_t kv_heads = 0, head_dim = 0;
  uint32_t padding = 0;                  // extra elements per KV row (the candidate's `padding`)
  uint32_t k_stride = 0, k_offset = 0;   // elements per token / of token 0 in k; stride 0 = kv_heads * head_dim
  uint32_t v_stride = 0, v_offset = 0;
  uint32_t workgroup = 64;
};

class KvWrite {
 public:
  KvWrite(gpu::KernelCache& kernels, const KvWriteConfig& config);
  gpu::BindGroup bind(gpu::Binding k, gpu::Binding v, gpu::Binding k_cache, gpu::Binding v_cache,
                      gpu::Binding step) const;
  void record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const;
  uint32_t row() const { return config_.head_dim + config_.padding; }

 private:
  gpu::KernelCache& kernels_;
  KvWriteConfig config_;
  const gpu::Kernel* kernel_;
  gpu::Buffer params_;
};

}  // namespace ember::kernels
