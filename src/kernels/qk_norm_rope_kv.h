// The attention input step fused into one dispatch (qk_norm_rope_kv.wgsl): per-head RMSNorm of
// q and k, RoPE, and the KV-cache append, on a fused qkv tensor. Same results as RmsNorm (heads
// mode, in place) on q and k, then Rope (shared_qk), then KvWrite. The position of token 0 comes
// from the step buffer (StepParams.start).
#pragma once

#include <cstdint>

#include "gpu/kernel.h"
#include "gpu/recorder.h"
#include "kernels/q4_matrix.h"

namespace ember::kernels {

struct QkNormRopeKvConfig {
  uint32_t heads = 0, kv_heads = 0, head_dim = 0;  // head_dim even
  uint32_t padding = 0;                            // extra elements per KV-cache row
  uint32_t stride = 0;                             // elements per token of qkv; 0 = (heads + 2 kv_heads) head_dim
  uint32_t q_offset = 0, k_offset = 0, v_offset = 0;  // of token 0's q, k, v; k 0 = after q, v 0 = after k
  float eps = 1e-5f;
  uint32_t cache_stride = 0;  // elements between two sequences' caches (batched decode)
  Reduction reduction = Reduction::best;
  uint32_t workgroup = 64;  // a power of two
};

class QkNormRopeKv {
 public:
  QkNormRopeKv(gpu::KernelCache& kernels, const QkNormRopeKvConfig& config);
  // qkv [T][stride] (q and k rewritten in place), q_norm/k_norm f32 [head_dim], cos/sin f32
  // [positions][head_dim / 2], caches f32 [positions][kv_heads][head_dim + padding], step.
  // Several sequences (T = 1 each): step holds one StepParams per sequence, qkv one row per
  // sequence, the caches one slot per sequence at cache_stride.
  gpu::BindGroup bind(gpu::Binding qkv, gpu::Binding q_norm, gpu::Binding k_norm, gpu::Binding cos, gpu::Binding sin,
                      gpu::Binding k_cache, gpu::Binding v_cache, gpu::Binding step) const;
  void record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T, uint32_t sequences = 1) const;
  uint32_t row() const { return config_.head_dim + config_.padding; }

 private:
  gpu::KernelCache& kernels_;
  QkNormRopeKvConfig config_;
  const gpu::Kernel* kernel_;
  gpu::Buffer params_;
};

}  // namespace ember::kernels
