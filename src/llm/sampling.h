// Sampling settings a user gives (CLI flags, API fields), validated with clear errors.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/sampler.h"

namespace ember::llm {

struct SamplingOptions {
  float temperature = 0.8f;     // 0 = greedy
  uint32_t top_k = 40;          // 0 = off (the GPU sampler still sees at most kMaxTopK candidates)
  float top_p = 0.95f;          // 1 = off
  float min_p = 0.05f;          // 0 = off
  float repeat_penalty = 1.0f;  // 1 = off; applied to ids in the last repeat_last_n tokens
  uint32_t repeat_last_n = 64;
  uint64_t seed = 0;

  static constexpr uint32_t kMaxTopK = 64;         // candidates the GPU pick sees (kernels/sampler.h)
  static constexpr uint32_t kMaxRepeatWindow = 256;

  bool greedy() const { return temperature <= 0.0f; }
  // Throws ember::Error naming the field (`prefix` + name, e.g. "--top-p") and the valid range.
  void validate(const std::string& prefix = "--") const;

  // The GPU sampler's parameters for the token sampled at `position`, the `step`-th of its
  // generation (the random draw depends only on seed and step), over the first `vocab` logits.
  kernels::SamplerParams gpu_params(uint32_t vocab, uint32_t position, uint32_t step) const;
};

// The GPU sampler every generation path uses (generate, serve, benchmarks) over `vocab` logits:
// the same configuration everywhere, so they all sample the same ids. `partials`: its first
// stage's workgroups (the pack's samplePartials, Lfm2Model::sample_partials), at most one per 64
// ids.
kernels::SamplerConfig sampler_config(uint32_t vocab, uint32_t partials);

}  // namespace ember::llm
