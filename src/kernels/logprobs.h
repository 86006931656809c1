// Log-probabilities of one row of logits on the GPU (logprobs.wgsl): the sampled token's and the
// best `top` tokens', recorded right after the sampler wrote its id, so they come back with it.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace ember::kernels {

// Mirrors `struct Params` in logprobs.wgsl.
struct LogprobParams {
  uint32_t vocab = 0;
  uint32_t slot = 0;  // tokens[slot] holds the sampled id
  uint32_t top = 0;   // 0..Logprobs::kMaxTop
  uint32_t pad0 = 0;
};
static_assert(sizeof(LogprobParams) == 16);

struct TopLogprobs {
  uint32_t id = 0;
  float logprob = 0;  // of `id`
  std::vector<std::pair<uint32_t, float>> top;  // best first; masked ids left out
};

class Logprobs {
 public:
  static constexpr uint32_t kMaxTop = 20;
  static constexpr uint64_t kOutBytes = (2 + 2 * uint64_t(kMaxTop)) * 4;

  explicit Logprobs(gpu::KernelCache& kernels);
  // logits f32 [vocab]; tokens u32; params: a LogprobParams buffer; out: kOutBytes.
  gpu::BindGroup bind(gpu::Binding logits, gpu::Binding tokens, gpu::Binding params, gpu::Binding out) const;
  void record(gpu::Recorder& rec, const gpu::BindGroup& group) const;
  // The output words read back, for a request of `top` alternatives.
  static TopLogprobs unpack(std::span<const uint32_t> words, uint32_t top);

 private:
  gpu::KernelCache& kernels_;
  const gpu::Kernel* kernel_;
};

}  // namespace ember::kernels
