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
                                        const LayerTailMatrices& m, Clock::time_point deadline) {
  const gpu::Device& device = kernels.device();
  const uint32_t H = uint32_t(shape.hidden);
  SeparateLayerTail tail(kernels, shape, m);
  gpu::Buffer delta = device.create_storage(uint64_t(H) * 8, "tune.delta");
  auto restart = [&](gpu::Recorder& rec) {
    tail.restart(rec);
    rec.clear(delta);
  };
  DownDeltaSearchResult res;
  res.separate_us = res.best_us = timer.time_us([&](gpu::Recorder& rec) { tail.record(rec); }, KernelTimer::Measure::span);

  // The out projection folds the delta (zero at the check) back into x, as decode's next layer does.
  kernels::MatvecConfig fold_c = tail.proj_config();
  fold_c.delta_fold = true;
  std::optional<kernels::MatvecQ4> fold_mv;
  kernels::Bound fold_b;
  try {
    fold_mv.emplace(kernels, fold_c);
    fold_b = fold_mv->bind(m.proj, {&tail.y}, {&tail.x}, {}, {}, {}, nullptr, {&delta});
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
      kernels::MatvecConfig c = tail.gate_up_config();
      c.down_rows = H;
      c.geometry.rows_per_subgroup = channels / (c.geometry.workgroup_size / (c.geometry.subgroup_size * c.geometry.subgroups_per_row));
      gd_mv.emplace(kernels, c);
      gd_b = gd_mv->bind(m.gate_up, {&tail.x}, {&tail.act}, {&tail.norm_w}, {}, {}, nullptr, {&delta}, &m.down);
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
    std::vector<float> got = device.download_as<float>(tail.x);
    const auto words = device.download_as<uint32_t>(delta);
    for (uint32_t i = 0; i < H; i++) got[i] += float(double(int32_t(words[2 * i + 1])) + words[2 * i] / 4294967296.0);
    if (const double d = rel_l2(got, tail.reference()); !(d <= kRejectRelL2)) {
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
