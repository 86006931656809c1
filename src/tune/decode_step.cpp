#include "tune/decode_step.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "tune/kernel_timer.h"

namespace ember::tune {

void fill_context(llm::Lfm2Model& model, std::span<const uint32_t> context_ids, std::span<const uint32_t> next_ids) {
  model.reset();
  model.prefill(context_ids);
  model.device().upload(model.tokens(), next_ids, uint64_t(context_ids.size()) * 4);
  model.device().wait_idle();
}

std::vector<double> decode_step_gpu_us(llm::Lfm2Model& model, std::span<const uint32_t> context_ids, std::span<const uint32_t> next_ids,
                                       const std::string& left_out) {
  const gpu::Device& device = model.device();
  fill_context(model, context_ids, next_ids);
  std::vector<double> us;
  constexpr uint32_t kBatch = 64;  // a step may make several timed regions (copies split passes)
  const uint32_t steps = uint32_t(next_ids.size());
  for (uint32_t first = 0; first < steps; first += kBatch) {
    gpu::Profiler prof(device, 2048);
    const uint32_t n = std::min(kBatch, steps - first);
    for (uint32_t i = 0; i < n; i++) {
      // Zero-padded names keep the steps in order in the map below.
      char name[16];
      std::snprintf(name, sizeof name, "step%04u", i);
      gpu::Recorder rec(device, &prof, gpu::Recorder::Timing::WholeSubmit, name);
      rec.leave_out(left_out);
      model.record_decode(rec);
      rec.submit();
    }
    std::map<std::string, std::pair<uint64_t, uint64_t>> span;  // step -> (first begin, last end)
    for (const auto& region : prof.collect()) {
      auto [it, fresh] = span.try_emplace(region.name, region.begin_ns, region.end_ns);
      if (!fresh) {
        it->second.first = std::min(it->second.first, region.begin_ns);
        it->second.second = std::max(it->second.second, region.end_ns);
      }
    }
    for (const auto& [name, se] : span) us.push_back((se.second - se.first) / 1e3);
  }
  return us;
}

std::vector<double> median_decode_steps(const formats::LlmPack& pack, std::shared_ptr<const llm::Lfm2Weights> weights,
                                        gpu::KernelCache& kernels, const std::vector<formats::RuntimeFile>& files, uint32_t context,
                                        uint32_t steps) {
  std::mt19937 rng(20261206);
  std::vector<uint32_t> ids(context + steps);
  for (auto& id : ids) id = rng() % uint32_t(pack.shape().vocab);
  const std::span<const uint32_t> context_ids(ids.data(), context), next_ids(ids.data() + context, steps);
  std::vector<formats::LlmPack> packs;
  for (formats::RuntimeFile f : files) {
    // Caches for the positions timed, not the pack's whole context: several models live at once.
    const int64_t need = int64_t(context) + steps + 1;
    if (f.runtime.max_total_positions <= 0 || f.runtime.max_total_positions > need) f.runtime.max_total_positions = need;
    packs.push_back(pack.with_file(f));
  }
  std::vector<std::unique_ptr<llm::Lfm2Model>> models;
  for (const auto& p : packs) models.push_back(std::make_unique<llm::Lfm2Model>(kernels.device(), kernels, p, weights, llm::ModelOptions{.quiet = true}));
  // Warm-up, not counted: the GPU idles while the models are built (pipeline compiles), and the
  // graphs timed right after read up to twice too slow, decreasing in timing order, for over a
  // second (the clocks ramping; two passes agreeing within 2% were not enough). Decode steps of
  // the first model for at least 1.5 s and until two passes agree within 2%, at most 3 s. A CPU
  // adapter has no clocks to ramp (and on a loaded CPU passes rarely agree): none there.
  using SteadyClock = std::chrono::steady_clock;
  const auto start = SteadyClock::now();
  for (double last = 0; kernels.device().adapter().type != "CPU";) {
    const double m = median(decode_step_gpu_us(*models.front(), context_ids, next_ids));
    const auto now = SteadyClock::now();
    if ((now >= start + std::chrono::milliseconds(1500) && last > 0 && std::abs(m - last) <= 0.02 * last) ||
        now >= start + std::chrono::seconds(3))
      break;
    last = m;
  }
  std::vector<std::vector<double>> us(files.size());
  for (int round = 0; round < 2; round++)
    for (size_t i = 0; i < models.size(); i++) {
      auto v = decode_step_gpu_us(*models[i], context_ids, next_ids);
      us[i].insert(us[i].end(), v.begin(), v.end());
    }
  std::vector<double> out;
  for (auto& v : us) out.push_back(median(v));
  return out;
}

}  // namespace ember::tune
