#include "tune/mlp_search.h"

#include <algorithm>
#include <optional>

#include "common/error.h"
#include "kernels/mlp_q4.h"
#include "tune/check.h"

namespace ember::tune {

nlohmann::json MlpSearchResult::to_json() const {
  auto choice = [](const MlpChoice& c) {
    return nlohmann::json{{"mlpSlices", c.slices}, {"mlpWorkgroup", c.workgroup}, {"mlpHalfProduct", c.half_product ? "down" : "none"}};
  };
  return {{"default", choice(reference)}, {"default_us", reference_us}, {"best", choice(best)}, {"best_us", best_us}, {"input_us", input_us},
          {"speedup", best_us > 0 ? reference_us / best_us : 0.0}, {"tried", tried}, {"rejected", rejected},
          {"invalid", invalid}, {"half_product_us", half_product_us}, {"budget_hit", budget_hit}};
}

MlpSearchResult search_mlp(gpu::KernelCache& kernels, KernelTimer& timer, const formats::LlmShape& shape, const kernels::Q4Matrix& gate_up,
                           const kernels::Q4Matrix& kquant, const std::vector<MlpChoice>& first, Clock::time_point deadline) {
  const gpu::Device& device = kernels.device();
  const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn);
  gpu::Buffer h = device.create_storage(uint64_t(H) * 4, "tune.h");
  gpu::Buffer x0 = device.create_storage(uint64_t(H) * 4, "tune.x0");
  gpu::Buffer x = device.create_storage(uint64_t(H) * 4, "tune.x");
  gpu::Buffer norm_w = device.create_storage(uint64_t(H) * 4, "tune.norm_w");
  device.upload(h, std::span<const float>(random_input(H, 21)));
  device.upload(x0, std::span<const float>(random_input(H, 22)));
  device.upload(norm_w, std::span<const float>(random_input(H, 23)));

  MlpSearchResult res;
  std::vector<float> ref_out;
  // Returns the time, or a negative value (-1 rejected, -2 invalid).
  auto run = [&](const MlpChoice& c, bool is_reference) -> double {
    std::optional<kernels::MlpQ4> mlp;
    kernels::MlpBound bound;
    try {
      // As decode runs it: the ffn norm in the prologue, reading the residual x itself.
      mlp.emplace(kernels, kernels::MlpConfig{.hidden = H, .ffn = F, .slices = c.slices, .workgroup_size = c.workgroup, .norm_input = true,
                                              .eps = float(shape.eps()), .half_product = c.half_product});
      bound = mlp->bind(gate_up, kquant, {&x}, {&x}, {&norm_w});
    } catch (const Error&) {
      if (is_reference) throw;
      return -2;
    }
    gpu::Recorder rec(device);
    rec.copy(x0, 0, x, 0, uint64_t(H) * 4);
    mlp->record(rec, bound);
    rec.submit();
    auto got = device.download_as<float>(x);
    if (is_reference) ref_out = got;
    else if (!(rel_l2(got, ref_out) <= (c.half_product ? kHalfRejectRelL2 : kRejectRelL2))) return -1;
    return timer.time_us([&](gpu::Recorder& r) { mlp->record(r, bound); });
  };

  res.reference = {40, std::min<uint32_t>(256, device.limits().maxComputeInvocationsPerWorkgroup)};
  res.reference_us = run(res.reference, true);
  res.best = res.reference;
  res.best_us = res.reference_us;
  res.tried = 1;
  if (!first.empty() && first.front() == res.reference) res.input_us = res.reference_us;
  // The input's own choice runs in f32 where the adapter has no shader-f16 (as the engine runs it).
  std::vector<MlpChoice> space;
  for (MlpChoice c : first) {
    if (!device.has_f16()) c.half_product = false;
    space.push_back(c);
  }
  for (uint32_t wg : {128u, 256u, 512u, 1024u})
    for (uint32_t slices : {10u, 20u, 40u, 60u, 80u, 120u, 160u, 320u})
      if (slices <= F && wg <= device.limits().maxComputeInvocationsPerWorkgroup) space.push_back({slices, wg});
  // The time (negative: rejected or invalid), or nothing once the deadline has passed.
  auto measure = [&](const MlpChoice& c) -> std::optional<double> {
    if (Clock::now() >= deadline) {
      res.budget_hit = true;
      return std::nullopt;
    }
    double us = run(c, false);
    res.tried++;
    if (!first.empty() && c == space.front()) res.input_us = us;
    if (us == -2) res.invalid++;
    else if (us < 0) res.rejected++;
    else if (us < res.best_us) {
      res.best_us = us;
      res.best = c;
    }
    return us;
  };
  std::vector<MlpChoice> done{res.reference};
  auto fresh = [&](const MlpChoice& c) { return std::find(done.begin(), done.end(), c) == done.end(); };
  for (const auto& c : space) {
    if (!fresh(c)) continue;
    if (!measure(c)) return res;
    done.push_back(c);
  }
  // f16 down products at the best geometry.
  if (device.has_f16()) {
    MlpChoice c = res.best;
    c.half_product = true;
    if (fresh(c)) res.half_product_us = measure(c).value_or(0);
  }
  return res;
}

}  // namespace ember::tune
