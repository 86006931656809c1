// Text generation on the GPU: prefill, then decode steps that sample on the GPU and feed the
// sampled id straight into the next step's embedding lookup. The CPU only reads ids back,
// asynchronously, to stream them and to check stop conditions; up to `in_flight` steps are
// submitted ahead, so the GPU never waits for the CPU.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "gpu/readback_ring.h"
#include "kernels/sampler.h"
#include "llm/lfm2_model.h"
#include "llm/sampling.h"

namespace ember::llm {

struct GenerateOptions {
  uint32_t max_tokens = 128;
  std::vector<uint32_t> stop_ids;  // end of generation (the id itself is reported, then stops)
  // Steps submitted ahead of the CPU. 1 keeps the caches exact at the stop (every decoded token
  // is one the caller kept): what multi-turn chat needs. More hides the read-back latency; the
  // steps in flight at a stop are discarded, and the sequence cannot be continued.
  uint32_t in_flight = 64;
  // Steps recorded into one submit, at most half of in_flight (one submit runs while the next is
  // recorded) and Lfm2Model::kStepRing. Submits grow to it as 1, 1, 2, 4, ... steps: the first
  // step goes alone (the time to first token waits for no batch), and a stop discards at most
  // about as many steps as it kept. Each submit costs the GPU a fixed amount whatever its size,
  // and batching shares that: 32 a submit decoded faster than 8 or 16 (45bfdd6 in
  // bench/PERFORMANCE.md; 64 / 128 in flight was inconclusive). The cost: after a stop the GPU
  // still runs the steps in flight before the next call's work; multi-turn chat runs with
  // in_flight 1.
  uint32_t steps_per_submit = 32;
  // When set: called with each kept step's logits, f32 [vocab] over the model's whole vocabulary,
  // before on_token for that step. They are the logits the sampler read, before the repetition
  // penalty, temperature and any filtering. Unset, nothing is copied or read back.
  std::function<void(std::span<const float>)> on_logits;
};

struct GenerationStats {
  uint32_t prompt_tokens = 0, generated = 0;
  double ttft_ms = 0;        // start -> first generated id on the CPU (prefill + first sample)
  double decode_tok_s = 0;   // generated ids after the first, over the time they took
  double total_ms = 0;
  bool stopped = false;      // hit a stop id (else max_tokens or the context end)
};

class Generator {
 public:
  // `sample_vocab`: ids the sampler may pick, [0, sample_vocab) (the tokenizer's size, so every
  // sampled id decodes; 0 = the model's vocabulary).
  explicit Generator(Lfm2Model& model, uint32_t sample_vocab = 0);
  ~Generator();

  // Prefills `prompt` after whatever the model already holds, then generates. `on_token(id)` is
  // called for each generated id in order; returning false stops generation.
  GenerationStats generate(std::span<const uint32_t> prompt, const SamplingOptions& sampling, const GenerateOptions& options,
                           const std::function<bool(uint32_t)>& on_token);

  // After a generate() with in_flight = 1: the last sampled id that was not decoded into the
  // caches (the stop id), so a continuation (next chat turn) starts by feeding it.
  std::vector<uint32_t> pending() const { return pending_; }
  // The sampler this generator chose for its device (Generator's constructor says how).
  const kernels::SamplerConfig& sampler_config() const { return sampler_->config(); }
  const kernels::Sampler& sampler() const { return *sampler_; }
  // Starts a new sequence (the model's caches and the pending id).
  void reset() {
    model_.reset();
    pending_.clear();
  }

 private:
  Lfm2Model& model_;
  std::unique_ptr<kernels::Sampler> sampler_;
  std::vector<kernels::Sampler::Groups> groups_;  // one per params ring slot
  gpu::Buffer params_ring_;  // step k's SamplerParams at slot k % Lfm2Model::kStepRing, params_stride_ apart
  uint64_t params_stride_ = 0;
  // A slot per submit in flight: its sampled ids, then its logits if asked; the ring checks the
  // status words of the submit's kernels (the sampler's, the decode step's) with them.
  std::unique_ptr<gpu::ReadbackRing> readback_;
  std::vector<uint32_t> pending_;
  uint32_t sample_vocab_;
};

}  // namespace ember::llm
