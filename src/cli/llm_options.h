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

  void add_to(CLI::App& cmd, bool with_sampling = true);
  llm::SessionOptions session() const;
  // Validates the sampling flags and settles the seed (a random one is printed).
  void finish_sampling(const std::string& command);
};

}  // namespace ember::cli
