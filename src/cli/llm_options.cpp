#include "cli/llm_options.h"

#include "cli/llama_compat.h"
#include "common/error.h"

namespace ember::cli {

void LlmOptions::add_to(CLI::App& cmd, bool with_sampling) {
  cmd.add_option("-m,--model", model, "model directory (runtime.json, weights.bin, tokenizer.json)")->required();
  gpu.add_to(cmd);
  cmd.add_flag("--quiet", quiet, "no loading progress or warnings on stderr");
  add_llama_cpp_notes(cmd);
  if (!with_sampling) return;
  cmd.add_option("--temperature,--temp", sampling.temperature, "0 = greedy")->capture_default_str();
  cmd.add_option("--top-k", sampling.top_k, "keep the k most likely tokens (0 = off, at most 64)")->capture_default_str();
  cmd.add_option("--top-p", sampling.top_p, "nucleus sampling (1 = off)")->capture_default_str();
  cmd.add_option("--min-p", sampling.min_p, "drop tokens below min-p x the best one's probability (0 = off)")->capture_default_str();
  cmd.add_option("--repeat-penalty", sampling.repeat_penalty, "penalise ids of the last --repeat-last-n tokens (1 = off)")->capture_default_str();
  cmd.add_option("--repeat-last-n", sampling.repeat_last_n, "window of the repeat penalty (at most 256)")->capture_default_str();
  add_seed_option(cmd, seed, "random seed: same seed, same tokens")->capture_default_str();
}

void LlmOptions::finish_sampling(const std::string& command) {
  sampling.validate();
  sampling.seed = resolve_seed(seed, command);
}

llm::SessionOptions LlmOptions::session() const {
  llm::SessionOptions s;
  s.device = gpu.device;
  s.model.quiet = quiet;
  return s;
}

}  // namespace ember::cli

namespace ember::cli {

void LlmOptions::add_context_option(CLI::App& cmd) {
  cmd.add_option("-c,--ctx-size", ctx_size,
                 "positions per sequence, prompt + generated (0 = the pack's maxTotalPositions, which is also the most: the caches "
                 "are sized when the model is packed)")
      ->capture_default_str();
}

uint32_t LlmOptions::context(uint32_t capacity) const {
  if (ctx_size == 0) return capacity;
  if (ctx_size > capacity)
    throw Error("the context of " + std::to_string(ctx_size) + " positions is larger than this model's " + std::to_string(capacity) +
                    " (maxTotalPositions, fixed when the model was packed)",
                "-c/--ctx-size", "give at most " + std::to_string(capacity) + ", or leave it out");
  if (ctx_size < 2) throw Error("the context must hold at least 2 positions", "-c/--ctx-size");
  return ctx_size;
}

}  // namespace ember::cli
