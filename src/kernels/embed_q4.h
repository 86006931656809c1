// Embedding lookup from a 4-bit matrix with token ids read from a GPU buffer (embed_q4.wgsl).
#pragma once

#include <cstdint>

#include "kernels/dispatch.h"
#include "kernels/q4_matrix.h"

namespace ember::kernels {

struct EmbedConfig {
  uint32_t rows = 0, cols = 0;  // rows = vocab; cols a multiple of 32
  bool asymmetric = true;       // the pack's embed matrix (aliasing the head) has zero points
  uint32_t workgroup_size = 128;
};

class EmbedQ4 {
 public:
  EmbedQ4(gpu::KernelCache& kernels, const EmbedConfig& config);

  // Binds W, ids (u32 [tokens], e.g. the sampler's output) and out (f32 [tokens][cols]). An id
  // >= rows gives a zero row.
  Bound bind(const Q4Matrix& w, gpu::Binding ids, gpu::Binding out, uint32_t tokens) const;
  void record(gpu::Recorder& rec, const Bound& bound) const;

  // One decode step that advances the step parameters on the GPU (embed_q4.wgsl ADVANCE_STEP):
  // embeds ids[start + rows] of the step that `step` (StepParams, read-write) describes, then
  // rewrites `step` as {that position, 1 row, decode_step + 1}. `ids` is the whole token buffer.
  Dispatch bind_decode(const Q4Matrix& w, gpu::Binding ids, gpu::Binding step, gpu::Binding out) const;

  const gpu::Kernel& kernel() const { return *kernel_; }

 private:
  gpu::KernelCache& kernels_;
  EmbedConfig config_;
  const gpu::Kernel* kernel_ = nullptr;
  const gpu::Kernel* decode_kernel_ = nullptr;
};

}  // namespace ember::kernels
