#include "llm/sampling.h"

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

}  // namespace ember::llm
