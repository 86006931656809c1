// Token sampling on the GPU in two stages (sampler_partials.wgsl, sampler_pick.wgsl): P workgroups
// each keep the best candidates of a slice of the logits, one workgroup picks. The sampled id is
// written into a u32 token buffer on the GPU, where the next step's embedding lookup reads it.
// Greedy sampling can also run as one dispatch (sampler_greedy.wgsl: the last of the P workgroups
// picks), one dependent stage a token less.
//
// Per-step settings live in a SamplerParams storage buffer the caller owns and rewrites with
// Device::upload before each submit (step/out_slot change per token; bind groups never do).
// The repetition window is a range of the same token buffer (the sequence's ids).
//
// Bound: sampling (not greedy) sees the best `max_top_k` candidates (K, default 64) after the
// repetition penalty; top_k is clamped to K and top_k = 0 means K. top-p/min-p act within them,
// so with top_k = 0 the tail beyond the K-th logit is never drawn. Greedy is exact over the vocab.
#pragma once

#include <cstdint>

#include "common/error.h"
#include "gpu/kernel.h"
#include "gpu/recorder.h"
#include "gpu/status_word.h"
#include "kernels/q4_matrix.h"

namespace ember::kernels {

// Mirrors `struct SamplerParams` in sampler_common.wgsl.
struct SamplerParams {
  uint32_t vocab = 0;
  float temperature = 1.0f;          // <= 0: the sampling pick returns the best candidate
  uint32_t top_k = 0;                // 0 = K
  float top_p = 1.0f;                // 1 = off
  float min_p = 0.0f;                // 0 = off
  float repetition_penalty = 1.0f;   // 1 = off
  uint32_t window_start = 0;         // recent ids: tokens[window_start, window_start + window_len)
  uint32_t window_len = 0;           // clamped to SamplerConfig::window_max
  uint32_t seed = 0;
  uint32_t step = 0;                 // RNG counter: the draw depends only on (seed, step)
  uint32_t out_slot = 0;             // the sampled id goes to tokens[out_slot]
  uint32_t pad0 = 0;
};
static_assert(sizeof(SamplerParams) == 48);

struct SamplerConfig {
  uint32_t vocab = 0;
  uint32_t partials = 256;    // P (the runtime's samplePartials)
  uint32_t max_top_k = 64;    // K candidates per partial and in the pick
  uint32_t sort_size = 512;   // power of two >= 2 K and >= workgroup
  uint32_t workgroup = 256;   // power of two
  uint32_t window_max = 256;  // longest repetition window
  // Nonzero: the pick also embeds the id it picks, as the next decode step's embedding lookup
  // would: it writes the id's row of a 4-bit table [embed_rows][embed_cols] (bind's `embed`) and
  // advances the step buffer (embed_q4.wgsl's decode entry), so that decode records no lookup.
  uint32_t embed_rows = 0, embed_cols = 0;
  bool embed_asymmetric = false;  // the table has zero points
  // Greedy sampling in one dispatch (sampler_greedy.wgsl) instead of two. It binds one storage
  // buffer more than the greedy pick (the logits): 4, or 9 with an asymmetric embedding.
  bool one_dispatch_greedy = false;
};

// Where an embedding pick (SamplerConfig::embed_rows) writes: the table's row of the picked id
// into `out` (f32 [embed_cols]); `step` is the step buffer it advances (step.h).
struct PickEmbedding {
  Q4Matrix table;
  gpu::Binding out, step;
};

class Sampler {
 public:
  Sampler(gpu::KernelCache& kernels, const SamplerConfig& config);
  struct Groups {
    gpu::BindGroup greedy, greedy_pick;  // greedy's partials and pick, or its one dispatch (no pick)
    gpu::BindGroup topk_partials, sample_pick;
  };
  // logits f32 [vocab]; tokens u32 (window and output slot); params: a SamplerParams buffer
  // (Device::create_storage(sizeof(SamplerParams)), see upload_params); embed: given exactly when
  // the config embeds.
  Groups bind(gpu::Binding logits, gpu::Binding tokens, gpu::Binding params, const PickEmbedding* embed = nullptr) const;
  void record_greedy(gpu::Recorder& rec, const Groups& groups) const;
  void record_sample(gpu::Recorder& rec, const Groups& groups) const;
  const SamplerConfig& config() const { return config_; }
  // Storage buffers the sampler's largest dispatch binds (Device limit: maxStorageBuffersPerShaderStage).
  static uint32_t storage_buffers(const SamplerConfig& config);
  // True once a one-dispatch greedy pick gave up waiting for a partial (its id was then wrong);
  // reads the status word back, so it waits for the GPU. Callers need not ask: record_greedy hands
  // the word to the recorder (gpu::Recorder::watch), so the read-back of the ids checks it.
  bool gave_up() const;
  // Tests of the give-up path only: makes every later one-dispatch greedy pick give up at once
  // (no effect without one_dispatch_greedy). The pick still writes an id; its status word says it
  // must not be used.
  void stall_for_tests(bool stall) const;

 private:
  gpu::KernelCache& kernels_;
  SamplerConfig config_;
  const gpu::Kernel *greedy_, *greedy_pick_ = nullptr, *topk_partials_, *sample_pick_;
  gpu::Buffer partials_;
  gpu::Buffer tagged_;  // one_dispatch_greedy: P tagged pairs, the arrivals counter, the status and stall words
  mutable gpu::StatusWord status_;  // record_greedy hands it to the recorder
  uint64_t status_offset() const;
};

void upload_params(const gpu::Device& device, const gpu::Buffer& buffer, const SamplerParams& params);

}  // namespace ember::kernels
