#include "tune/residual_mlp_search.h"

#include <optional>
#include <thread>

#include "common/error.h"
#include "kernels/residual_mlp_q4.h"
#include "kernels/step.h"
#include "tune/check.h"

namespace ember::tune {

nlohmann::json ResidualMlpSearchResult::to_json() const {
  nlohmann::json t = nlohmann::json::array();
  for (const auto& r : tried) t.push_back({{"workgroups", r.workgroups}, {"us", r.us}, {"result", r.result}});
  return {{"separate_us", separate_us}, {"workgroups", workgroups}, {"best_us", best_us},
          {"tried", t}, {"budget_hit", budget_hit}};
}

ResidualMlpSearchResult search_residual_mlp(gpu::KernelCache& kernels, KernelTimer& timer, const formats::LlmShape& shape,
                                            const LayerTailMatrices& m, Clock::time_point deadline) {
  const gpu::Device& device = kernels.device();
  const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn), CO = m.proj.cols;
  const float eps = float(shape.eps());
  SeparateLayerTail tail(kernels, shape, m);
  ResidualMlpSearchResult res;
  // Both timed as spans: the separate path's cost includes the gaps between its dispatches.
  res.separate_us = res.best_us = timer.time_us([&](gpu::Recorder& rec) { tail.record(rec); }, KernelTimer::Measure::span);

  // The one dispatch: each run takes the next decode_step (its parity tags the scratch words), set
  // in the command stream from a slot of its own.
  gpu::Buffer step = kernels::create_step_buffer(device, "tune.step");
  gpu::Buffer step_ring = device.create_storage(64 * sizeof(kernels::StepParams), "tune.step_ring");
  uint32_t steps = 0;  // uses of the current scratch
  // Grids around one or a few workgroups per multiprocessor of common GPUs (WebGPU does not say
  // how many the adapter has); a CPU adapter runs a workgroup per core at once.
  std::vector<uint32_t> grids{32, 64, 96, 128, 132, 160, 192, 256, 264, 384, 396, 512};
  if (device.adapter().type == "CPU") grids = {1, std::max(1u, std::thread::hardware_concurrency())};
  for (uint32_t workgroups : grids) {
    if (Clock::now() >= deadline) {
      res.budget_hit = true;
      return res;
    }
    ResidualMlpTry t{workgroups};
    std::optional<kernels::ResidualMlpQ4> k;
    kernels::Bound bound;
    gpu::Buffer scratch;
    try {
      k.emplace(kernels, kernels::ResidualMlpConfig{.hidden = H, .ffn = F, .proj_cols = CO, .workgroups = workgroups, .eps = eps});
      scratch = device.create_storage(k->scratch_bytes(), "tune.residual_mlp.scratch");
      steps = 0;  // a fresh scratch: its uses count from 1
      bound = k->bind(m.proj, m.gate_up, m.down, {&tail.y}, {&tail.x}, {&tail.norm_w}, {&scratch}, {&step});
    } catch (const Error& e) {
      t.result = e.what();
      res.tried.push_back(t);
      continue;
    }
    auto fused = [&](gpu::Recorder& rec) {
      steps++;
      rec.write(step_ring, uint64_t(steps % 64) * sizeof(kernels::StepParams), kernels::StepParams{.decode_step = steps}, step);
      k->record(rec, bound);
    };
    gpu::Recorder rec(device);
    tail.restart(rec);
    fused(rec);
    rec.submit();
    auto gave_up = [&] { return device.download_as<uint32_t>(scratch, k->status_offset(), 1)[0] != 0; };
    if (gave_up()) {
      t.result = "a wait gave up (the grid does not run all at once)";
      res.tried.push_back(t);
      break;  // larger grids will not either
    }
    if (const double d = rel_l2(device.download_as<float>(tail.x), tail.reference()); !(d <= kRejectRelL2)) {
      t.result = "output differs from the separate dispatches (rel L2 " + std::to_string(d) + ")";
      res.tried.push_back(t);
      continue;
    }
    t.us = timer.time_us(fused, KernelTimer::Measure::span);
    if (gave_up()) {
      t.us = 0;
      t.result = "a wait gave up while timed";
      res.tried.push_back(t);
      break;
    }
    res.tried.push_back(t);
    if (t.us < res.best_us) {
      res.best_us = t.us;
      res.workgroups = workgroups;
    }
  }
  return res;
}

}  // namespace ember::tune
