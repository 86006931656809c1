#include "tune/residual_mlp_search.h"

#include <optional>
#include <thread>

#include "common/error.h"
#include "kernels/lfm2/residual_mlp_q4.h"
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
                                            const ResidualMlpMatrices& m, Clock::time_point deadline) {
  const gpu::Device& device = kernels.device();
  const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn), CO = m.proj.cols;
  const float eps = float(shape.eps());
  gpu::Buffer y = device.create_storage(uint64_t(CO) * 4, "tune.y");
  gpu::Buffer x0 = device.create_storage(uint64_t(H) * 4, "tune.x0");
  gpu::Buffer x = device.create_storage(uint64_t(H) * 4, "tune.x");
  gpu::Buffer norm_w = device.create_storage(uint64_t(H) * 4, "tune.norm_w");
  gpu::Buffer act = device.create_storage(uint64_t(F) * 4, "tune.act");
  device.upload(y, std::span<const float>(random_input(CO, 31)));
  device.upload(x0, std::span<const float>(random_input(H, 32)));
  device.upload(norm_w, std::span<const float>(random_input(H, 33)));
  auto restart = [&](gpu::Recorder& rec) { rec.copy(x0, 0, x, 0, uint64_t(H) * 4); };

  // The separate path, as decode runs it: out projection into x, gated gate_up with the ffn norm
  // in its prologue, down into x.
  kernels::MatvecQ4 proj_mv(kernels, {.rows = H, .cols = CO, .variant = m.proj_config.variant, .geometry = m.proj_config.geometry,
                                      .mode = kernels::OutputMode::accumulate});
  kernels::MatvecQ4 gu_mv(kernels, {.rows = F, .cols = H, .variant = m.gate_up_config.variant, .geometry = m.gate_up_config.geometry,
                                    .gated = true, .norm_input = true, .eps = eps});
  kernels::MatvecQ4 down_mv(kernels, {.rows = H, .cols = F, .variant = m.down_config.variant, .geometry = m.down_config.geometry,
                                      .mode = kernels::OutputMode::accumulate});
  auto proj_b = proj_mv.bind(m.proj, {&y}, {&x});
  auto gu_b = gu_mv.bind(m.gate_up, {&x}, {&act}, {&norm_w});
  auto down_b = down_mv.bind(m.down, {&act}, {&x});
  auto separate = [&](gpu::Recorder& rec) {
    proj_mv.record(rec, proj_b);
    gu_mv.record(rec, gu_b);
    down_mv.record(rec, down_b);
  };
  {
    gpu::Recorder rec(device);
    restart(rec);
    separate(rec);
    rec.submit();
  }
  const std::vector<float> reference = device.download_as<float>(x);
  ResidualMlpSearchResult res;
  // Both timed as spans: the separate path's cost includes the gaps between its dispatches.
  res.separate_us = res.best_us = timer.time_us(separate, KernelTimer::Measure::span);

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
      bound = k->bind(m.proj, m.gate_up, m.down, {&y}, {&x}, {&norm_w}, {&scratch}, {&step});
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
    restart(rec);
    fused(rec);
    rec.submit();
    auto gave_up = [&] { return device.download_as<uint32_t>(scratch, k->status_offset(), 1)[0] != 0; };
    if (gave_up()) {
      t.result = "a wait gave up (the grid does not run all at once)";
      res.tried.push_back(t);
      break;  // larger grids will not either
    }
    if (const double d = rel_l2(device.download_as<float>(x), reference); !(d <= kRejectRelL2)) {
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
