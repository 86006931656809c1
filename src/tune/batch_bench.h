// `ember bench batch`: what one step of the server's batched decoder costs (llm::Lfm2BatchDecoder
// plus a sampler per row, as ember serve records it) at several numbers of sequences: aggregate
// tokens/s, GPU time per step, the CPU time to record and submit it, dispatches per step, and
// optionally a per-kernel GPU breakdown. One sequence runs the model's own decode (as serve does).
// Medians over repeats after one warm-up; no HTTP, no tokenizer.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/lfm2_model.h"
#include "tune/llm_bench.h"

namespace ember::tune {

struct BatchBenchOptions {
  std::vector<uint32_t> rows{1, 4, 16};  // sequences decoded together
  uint32_t context = 128;                // prompt tokens of each sequence before the timed steps
  uint32_t steps = 64;                   // decode steps timed per repeat
  int repeats = 3;
  bool sample = false;                   // temperature 1 sampling instead of greedy
  bool profile = false;
};

struct BatchRowsBench {
  uint32_t rows = 0;
  size_t dispatches = 0;      // per step, sampler included
  double step_wall_us = 0;    // steps submitted back to back (one in flight behind the CPU), per step
  double record_cpu_us = 0;   // recording + submitting one step on the CPU
  double step_gpu_us = 0;     // GPU time of one step (timestamps around the whole submit)
  double tok_s = 0;           // rows / step_wall_us
  std::vector<KernelCost> kernels;  // --profile (bytes and floor not computed)
};

struct BatchBenchResult {
  nlohmann::json device;
  BatchBenchOptions options;
  std::vector<BatchRowsBench> rows;
  nlohmann::json to_json() const;
  std::string table() const;
};

BatchBenchResult bench_batch(llm::Lfm2Model& model, uint32_t sample_vocab, const BatchBenchOptions& options);

}  // namespace ember::tune
