#include "tune/norm_search.h"

#include "common/error.h"
#include "kernels/rmsnorm.h"
#include "tune/check.h"

namespace ember::tune {

nlohmann::json NormFusionResult::to_json() const {
  nlohmann::json s = nlohmann::json::array();
  for (const auto& x : shapes)
    s.push_back({{"shape", x.key}, {"count", x.count}, {"fused_us", x.fused_us}, {"separate_us", x.separate_us}, {"rel_l2", x.rel_l2},
                 {"rejected", x.rejected}});
  return {{"shapes", s}, {"fused_total_us", fused_total_us}, {"separate_total_us", separate_total_us}, {"normFuse", norm_fuse},
          {"budget_hit", budget_hit}};
}

NormFusionResult search_norm_fusion(gpu::KernelCache& kernels, KernelTimer& timer, const std::vector<MatrixShape>& shapes,
                                    const std::vector<MatvecConfigChoice>& configs, const std::vector<kernels::Q4Matrix>& weights,
                                    float eps, Clock::time_point deadline, Clock::duration first_estimate) {
  const gpu::Device& device = kernels.device();
  NormFusionResult res;
  bool any_rejected = false;
  Clock::duration estimate = first_estimate;
  for (size_t i = 0; i < shapes.size(); i++) {
    const auto started = Clock::now();
    if (started + estimate >= deadline) {
      res.budget_hit = true;
      break;
    }
    const MatrixShape& s = shapes[i];
    const uint32_t H = s.cols;
    gpu::Buffer x = device.create_storage(uint64_t(H) * 4, "tune.x");
    gpu::Buffer w = device.create_storage(uint64_t(H) * 4, "tune.norm_w");
    gpu::Buffer h = device.create_storage(uint64_t(H) * 4, "tune.h");
    gpu::Buffer y = device.create_storage(uint64_t(s.rows) * 4, "tune.y");
    device.upload(x, std::span<const float>(random_input(H, 31)));
    device.upload(w, std::span<const float>(random_input(H, 32)));
    kernels::MatvecConfig mc{.rows = s.rows, .cols = s.cols, .asymmetric = s.asymmetric, .variant = configs[i].variant,
                             .geometry = configs[i].geometry, .mode = kernels::OutputMode::overwrite, .eps = eps};
    kernels::MatvecQ4 plain(kernels, mc);
    mc.norm_input = true;
    kernels::MatvecQ4 fused(kernels, mc);
    kernels::RmsNorm norm(kernels, {.cols = H, .eps = eps, .subgroups = device.has_subgroups()});
    auto norm_b = norm.bind({&x}, {&w}, {&h});
    auto plain_b = plain.bind(weights[i], {&h}, {&y});
    auto fused_b = fused.bind(weights[i], {&x}, {&y}, {&w});
    auto run = [&](bool f) {
      gpu::Recorder rec(device);
      if (f) {
        fused.record(rec, fused_b);
      } else {
        norm.record(rec, norm_b, 1);
        plain.record(rec, plain_b);
      }
      rec.submit();
      return device.download_as<float>(y);
    };
    NormFusionShape r{.key = s.key, .count = s.count};
    auto separate_out = run(false);
    r.rel_l2 = rel_l2(run(true), separate_out);
    r.rejected = !(r.rel_l2 <= kRejectRelL2);
    any_rejected |= r.rejected;
    r.separate_us = timer.time_us([&](gpu::Recorder& rec) {
      norm.record(rec, norm_b, 1);
      plain.record(rec, plain_b);
    });
    r.fused_us = timer.time_us([&](gpu::Recorder& rec) { fused.record(rec, fused_b); });
    res.fused_total_us += r.fused_us * s.count;
    res.separate_total_us += r.separate_us * s.count;
    res.shapes.push_back(r);
    estimate = Clock::now() - started;
  }
  res.norm_fuse = !res.budget_hit && !any_rejected && res.fused_total_us <= res.separate_total_us;
  return res;
}

}  // namespace ember::tune
