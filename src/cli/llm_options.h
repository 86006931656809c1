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

  void add_to(CLI::App& cmd, bool with_sampling = true);
  llm::SessionOptions session() const;
};

}  // namespace ember::cli
