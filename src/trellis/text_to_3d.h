// TRELLIS-text's first half on the GPU: prompt -> CLIP text context (text encoder stage) -> occupancy
// latent (ss-flow stage, guided Euler sampler) -> occupancy logits (ss-decoder stage). The stages
// come from a pipeline folder (trellis/pipeline_config.h); opening it checks each slot holds the
// right stage kind and that the channels agree between stages, before any GPU work.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/kernel.h"
#include "trellis/flow_sampler.h"
#include "trellis/pipeline_config.h"

namespace ember::trellis {

struct TextTo3DRequest {
  std::string prompt;
  std::string negative_prompt;  // upstream's unconditional context is the empty prompt's
  uint64_t seed = 0;            // sample s starts from gaussian_noise(seed + s)
  int samples = 1;
  SamplerOptions sampler;
};

struct TextTo3DEvents {
  std::function<void(const std::string& stage, int sample)> stage;           // a stage starts
  std::function<void(const StepReport& step, int sample)> step;              // a sampler step ended
};

struct TextTo3DSample {
  std::vector<float> logits;         // [n0][n1][n2], occupied where > 0
  std::array<uint32_t, 3> extent{};  // 64^3 for the released decoder
  size_t occupied = 0;
};

struct TextTo3DTimes {
  double open_s = 0, text_s = 0, flow_s = 0, decode_s = 0;
};

class TextTo3DPipeline {
 public:
  TextTo3DPipeline(gpu::KernelCache& kernels, const PipelineConfig& config);
  ~TextTo3DPipeline();

  // Stages whose manifest says they hold random weights (`ember synth`): their output is noise.
  const std::vector<std::string>& random_stages() const { return random_; }
  std::array<uint32_t, 3> output_extent() const;
  const TextTo3DTimes& times() const { return times_; }

  std::vector<TextTo3DSample> run(const TextTo3DRequest& request, const TextTo3DEvents& events = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<std::string> random_;
  TextTo3DTimes times_;
};

}  // namespace ember::trellis
