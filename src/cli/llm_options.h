// Flags the LLM commands share (generate, chat, bench llm): model, device, sampling.
#pragma once

#include <string>

#include "cli/commands.h"
#include "llm/sampling.h"
#include "llm/session.h"

namespace ember::cli {

struct LlmOptions {
  std::string model;
  GpuOptions gpu;
  llm::SamplingOptions sampling;
  bool quiet = false;
  int64_t seed = 0;  // --seed; -1 = random (finish_sampling draws it)
  uint32_t ctx_size = 0;  // -c: positions per sequence (prompt + generated); 0 = the pack's

  void add_to(CLI::App& cmd, bool with_sampling = true);
  llm::SessionOptions session() const;
  // Validates the sampling flags and settles the seed (a random one is printed).
  void finish_sampling(const std::string& command);
  // The positions a sequence may use: -c, or the model's `capacity` (maxTotalPositions) without
  // it. Throws ember::Error naming -c when it asks for more than the model holds.
  uint32_t context(uint32_t capacity) const;
  void add_context_option(CLI::App& cmd);  // -c/--ctx-size (generate, chat, serve)
};

}  // namespace ember::cli
