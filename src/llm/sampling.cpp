#include "llm/sampling.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace ember::llm {

void SamplingOptions::validate(const std::string& prefix) const {
  auto bad = [&](const std::string& field, const std::string& value, const std::string& range) {
    throw Error(prefix + field + " = " + value + " is invalid", "sampling", "use " + range);
  };
  if (!std::isfinite(temperature) || temperature < 0) bad("temperature", std::to_string(temperature), "a value >= 0 (0 = greedy)");
  if (top_k > kMaxTopK) bad("top-k", std::to_string(top_k), "0..64 (0 = off; the GPU sampler keeps 64 candidates)");
  if (!std::isfinite(top_p) || top_p <= 0 || top_p > 1) bad("top-p", std::to_string(top_p), "a value in (0, 1]");
  if (!std::isfinite(min_p) || min_p < 0 || min_p >= 1) bad("min-p", std::to_string(min_p), "a value in [0, 1)");
  if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0) bad("repeat-penalty", std::to_string(repeat_penalty), "a value > 0 (1 = off)");
  if (repeat_last_n > kMaxRepeatWindow) bad("repeat-last-n", std::to_string(repeat_last_n), "0..256");
}

kernels::SamplerParams SamplingOptions::gpu_params(uint32_t vocab, uint32_t position, uint32_t step) const {
  kernels::SamplerParams p;
  p.vocab = vocab;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.repetition_penalty = repeat_penalty;
  p.window_len = std::min(position, repeat_last_n);
  p.window_start = position - p.window_len;
  p.seed = static_cast<uint32_t>(seed ^ (seed >> 32));
  p.step = step;
  p.out_slot = position;
  return p;
}

kernels::SamplerConfig sampler_config(uint32_t vocab, uint32_t partials) {
  kernels::SamplerConfig sc;
  sc.vocab = vocab;
  sc.partials = std::clamp<uint32_t>(partials, 1, std::max<uint32_t>(1, vocab / 64));
  sc.max_top_k = SamplingOptions::kMaxTopK;
  sc.one_dispatch_greedy = true;  // 4 storage buffers: every WebGPU device binds them
  sc.window_max = SamplingOptions::kMaxRepeatWindow;
  return sc;
}

}  // namespace ember::llm
