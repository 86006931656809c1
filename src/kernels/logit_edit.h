// Per-step edits of one row of logits before sampling (logit_edit.wgsl): OpenAI's logit_bias and
// the allowed-token mask of constrained decoding. The caller owns an edit buffer per row
// (buffer_bytes), rewrites it with pack() + Device::upload before each submit, and records the
// edit just before the sampler; rows without edits record nothing.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace ember::kernels {

class LogitEdit {
 public:
  static constexpr uint32_t kMaxBias = 1024;  // logit_bias entries per row

  LogitEdit(gpu::KernelCache& kernels, uint32_t vocab);
  uint32_t vocab() const { return vocab_; }
  uint32_t mask_words() const { return (vocab_ + 31) / 32; }
  uint64_t buffer_bytes() const { return (4 + uint64_t(mask_words()) + 2 * uint64_t(kMaxBias)) * 4; }

  // The edit words: `mask` (mask_words() words; empty = no mask) and distinct-id biases
  // (at most kMaxBias; ids at or past vocab are ignored by the kernel).
  std::vector<uint32_t> pack(std::span<const uint32_t> mask, const std::vector<std::pair<uint32_t, float>>& bias) const;

  // logits: f32 [vocab] (edited in place); edit: a buffer of buffer_bytes().
  struct Groups {
    gpu::BindGroup bias, mask;
  };
  Groups bind(gpu::Binding logits, gpu::Binding edit) const;
  void record(gpu::Recorder& rec, const Groups& groups, bool mask, uint32_t biases) const;

 private:
  gpu::KernelCache& kernels_;
  uint32_t vocab_;
  const gpu::Kernel *bias_, *mask_;
};

}  // namespace ember::kernels
