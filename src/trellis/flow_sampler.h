// TRELLIS FlowEulerGuidanceIntervalSampler on the GPU: the latent stays on the device between
// steps; each step is one submit (forward at batch 2 where guidance applies, else batch 1, then
// the Euler update), queued while the step before it runs. Schedule in f64 as docs/models.md specifies.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "trellis/sampler_options.h"
#include "trellis/ss_flow.h"

namespace ember::gpu {
class Profiler;
}

namespace ember::trellis {

// t_i = r s / (1 + (r - 1) s) for s = linspace(1, 0, steps + 1).
std::vector<double> flow_schedule(int steps, double rescale_t);
// Whether step i's t is inside the guidance interval (both ends inclusive).
bool guided_at(double t, const SamplerOptions& options);

// Deterministic standard Gaussian noise: splitmix64 counter stream + Box-Muller in f64, so the same
// seed gives the same latent on every platform and standard library.
std::vector<float> gaussian_noise(uint64_t seed, size_t count);

struct StepReport {
  int step, steps;
  double t, t_next;
  bool guided;
  double seconds;  // wall time from the previous step's end (or the start) to this step's end
  int sample = 0, samples = 1;  // which latent of a batch (sample_batch)
};

class FlowSampler {
 public:
  explicit FlowSampler(SsFlowModel& model);
  ~FlowSampler();
  // noise: [in_channels][tokens] (latent layout). The model's context must hold cond (row 0) and
  // the negative context (row 1). Returns the final latent in the same layout. With `velocities`,
  // also the velocity after guidance of every step, [steps][in_channels][tokens] (the latent
  // after step i is the one before it minus (t_i - t_{i+1}) times velocity i).
  std::vector<float> sample(const std::vector<float>& noise, const SamplerOptions& options,
                            const std::function<void(const StepReport&)>& progress = {}, gpu::Profiler* profiler = nullptr,
                            std::vector<float>* velocities = nullptr);

  // A batch, as upstream's sampler takes it: noise [B][in_channels][tokens]; cond and neg
  // [B or 1][ctx_tokens][cond_channels], a single context repeating over the batch (this sets the
  // model's context). Returns [B][in_channels][tokens]; velocities [steps][B][in_channels][tokens].
  // The samples run one after another: the model's forward is built for batch 1 and 2 (a guided
  // step's conditional | unconditional pair), and a batch-2 forward of the full latent grid already
  // fills the GPU, so batch 2B forwards would save little beyond launch overhead at B times the
  // activation memory. Sample b's latent equals a batch-1 run of its own noise and contexts.
  std::vector<float> sample_batch(const std::vector<float>& noise, std::span<const float> cond, std::span<const float> neg,
                                  int64_t ctx_tokens, const SamplerOptions& options,
                                  const std::function<void(const StepReport&)>& progress = {}, gpu::Profiler* profiler = nullptr,
                                  std::vector<float>* velocities = nullptr);

 private:
  SsFlowModel& model_;
  gpu::Buffer x_, params_;
  kernels::Dispatch step_;
};

}  // namespace ember::trellis
