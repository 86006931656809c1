// The parameters of TRELLIS FlowEulerGuidanceIntervalSampler (docs/models.md "The flow sampler"); defaults are
// the released text pipelines' values. Shared by the GPU sampler and the CPU reference.
#pragma once

namespace ember::trellis {

struct SamplerOptions {
  int steps = 25;
  double cfg_strength = 7.5;
  double cfg_lo = 0.5, cfg_hi = 1.0;  // guidance where cfg_lo <= t <= cfg_hi (rescaled t)
  double rescale_t = 3.0;
  // Throws ember::Error naming the bad option (--steps, --cfg, --cfg-interval, --rescale-t).
  void validate() const;
};

}  // namespace ember::trellis
