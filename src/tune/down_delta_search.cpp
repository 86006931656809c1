#include "tune/down_delta_search.h"

#include <optional>

#include "common/error.h"
#include "tune/check.h"

namespace ember::tune {

nlohmann::json DownDeltaSearchResult::to_json() const {
  nlohmann::json t = nlohmann::json::array();
  for (const auto& r : tried) t.push_back({{"channels", r.channels}, {"us", r.us}, {"result", r.result}});
  return {{"separate_us", separate_us}, {"channels", channels}, {"best_us", best_us}, {"tried", t}, {"budget_hit", budget_hit}};
}

std::vector<uint32_t> down_delta_channels(const kernels::MatvecGeometry& g) {
  const uint32_t groups = g.workgroup_size / (g.subgroup_size * g.subgroups_per_row);
  std::vector<uint32_t> out;
  for (uint32_t c = 8; c <= 128; c *= 2)
    if (groups && c % groups == 0 && c / groups <= 8) out.push_back(c);
  return out;
}

DownDeltaSearchResult search_down_delta(gpu::KernelCache& kernels, KernelTimer& timer, const formats::LlmShape& shape,
                                        const ResidualMlpMatrices& m, Clock::time_point deadline) {
  const gpu::Device& device = kernels.device();
  const uint32_t H = uint32_t(shape.hidden), F = uint32_t(shape.ffn), CO = m.proj.cols;
  const float eps = float(shape.eps());
  gpu::Buffer y = device.create_storage(uint64_t(CO) * 4, "tune.y");
  gpu::Buffer x0 = device.create_storage(uint64_t(H) * 4, "tune.x0");
  gpu::Buffer x = device.create_storage(uint64_t(H) * 4, "tune.x");
  gpu::Buffer norm_w = device.create_storage(uint64_t(H) * 4, "tune.norm_w");
  gpu::Buffer act = device.create_storage(uint64_t(F) * 4, "tune.act");
  gpu::Buffer delta = device.create_storage(uint64_t(H) * 8, "tune.delta");
  device.upload(y, std::span<const float>(random_input(CO, 41)));
  device.upload(x0, std::span<const float>(random_input(H, 42)));
  device.upload(norm_w, std::span<const float>(random_input(H, 43)));
  auto restart = [&](gpu::Recorder& rec) {
    rec.copy(x0, 0, x, 0, uint64_t(H) * 4);
    rec.clear(delta);
  };
  const kernels::MatvecConfig proj_c{.rows = H, .cols = CO, .variant = m.proj_config.variant, .geometry = m.proj_config.geometry,
                                     .mode = kernels::OutputMode::accumulate};
  const kernels::MatvecConfig gu_c{.rows = F, .cols = H, .variant = m.gate_up_config.variant, .geometry = m.gate_up_config.geometry,
                                   .gated = true, .norm_input = true, .eps = eps};
  kernels::MatvecQ4 proj_mv(kernels, proj_c), gu_mv(kernels, gu_c);
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
  DownDeltaSearchResult res;
  res.separate_us = res.best_us = timer.time_us(separate, KernelTimer::Measure::span);

  // The out projection folds the delta (zero at the check) back into x, as decode's next layer does.
  kernels::MatvecConfig fold_c = proj_c;
  fold_c.delta_fold = true;
  std::optional<kernels::MatvecQ4> fold_mv;
  kernels::Bound fold_b;
  try {
    fold_mv.emplace(kernels, fold_c);
    fold_b = fold_mv->bind(m.proj, {&y}, {&x}, {}, {}, {}, nullptr, {&delta});
  } catch (const Error& e) {
    res.tried.push_back({0, 0, std::string("out projection with the delta fold: ") + e.what()});
    return res;
  }
  for (uint32_t channels : down_delta_channels(m.gate_up_config.geometry)) {
    if (Clock::now() >= deadline) {
      res.budget_hit = true;
      return res;
    }
    DownDeltaTry t{channels};
    std::optional<kernels::MatvecQ4> gd_mv;
    kernels::Bound gd_b;
    try {
      kernels::MatvecConfig c = gu_c;
      c.down_rows = H;
      c.geometry.rows_per_subgroup = channels / (c.geometry.workgroup_size / (c.geometry.subgroup_size * c.geometry.subgroups_per_row));
      gd_mv.emplace(kernels, c);
      gd_b = gd_mv->bind(m.gate_up, {&x}, {&act}, {&norm_w}, {}, {}, nullptr, {&delta}, &m.down);
    } catch (const Error& e) {
      t.result = e.what();
      res.tried.push_back(t);
      continue;
    }
    auto fused = [&](gpu::Recorder& rec) {
      fold_mv->record(rec, fold_b);
      gd_mv->record(rec, gd_b);
    };
    gpu::Recorder rec(device);
    restart(rec);
    fused(rec);
    rec.submit();
    std::vector<float> got = device.download_as<float>(x);
    const auto words = device.download_as<uint32_t>(delta);
    for (uint32_t i = 0; i < H; i++) got[i] += float(double(int32_t(words[2 * i + 1])) + words[2 * i] / 4294967296.0);
    if (const double d = rel_l2(got, reference); !(d <= kRejectRelL2)) {
      t.result = "x + delta differs from the separate dispatches (rel L2 " + std::to_string(d) + ")";
      res.tried.push_back(t);
      continue;
    }
    t.us = timer.time_us(fused, KernelTimer::Measure::span);
    res.tried.push_back(t);
    if (t.us < res.best_us) {
      res.best_us = t.us;
      res.channels = channels;
    }
  }
  return res;
}

}  // namespace ember::tune
