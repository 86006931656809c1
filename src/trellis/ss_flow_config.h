// Shape of a TRELLIS SparseStructureFlowModel (patch size 1, absolute position embedding, qk RMS
// norm on self-attention only, no shared modulation), and its sampler's parameters.
#pragma once

#include <cstdint>
#include <string>

namespace ember::trellis {

class TensorSource;

struct SsFlowConfig {
  int64_t resolution = 16;       // grid side: tokens = resolution^3
  int64_t in_channels = 8;
  int64_t out_channels = 8;
  int64_t model_channels = 768;
  int64_t cond_channels = 768;
  int64_t num_blocks = 12;
  int64_t num_heads = 12;        // head dim is model_channels / num_heads = 64
  int64_t mlp_ratio = 4;
  static constexpr int64_t kHeadDim = 64;
  static constexpr int64_t kFreqDim = 256;  // timestep frequency embedding width

  int64_t tokens() const { return resolution * resolution * resolution; }
  int64_t mlp_channels() const { return model_channels * mlp_ratio; }

  // TRELLIS-text-base's ss_flow (DiT-B).
  static SsFlowConfig seed() { return {}; }
  // Read from the tensor shapes of a stage; throws ember::Error naming the tensor that is wrong.
  static SsFlowConfig from_tensors(const TensorSource& source);
};

// FlowEulerGuidanceIntervalSampler parameters; defaults are the released text pipelines' values.
struct SamplerOptions {
  int steps = 25;
  double cfg_strength = 7.5;
  double cfg_lo = 0.5, cfg_hi = 1.0;  // guidance where cfg_lo <= t <= cfg_hi (rescaled t)
  double rescale_t = 3.0;
  // Throws ember::Error naming the bad field.
  void validate() const;
};

}  // namespace ember::trellis
