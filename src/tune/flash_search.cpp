#include "tune/flash_search.h"

#include <cmath>
#include <random>

#include "kernels/attention.h"
#include "kernels/step.h"
#include "tune/check.h"

namespace ember::tune {

nlohmann::json FlashPoint::to_json() const {
  nlohmann::json t = nlohmann::json::array();
  for (const auto& [b, us] : tried) t.push_back({{"blocks", b}, {"us", us}});
  return {{"positions", positions}, {"best_blocks", best_blocks}, {"best_us", best_us},
          {"one_block_us", one_block_us}, {"speedup", best_us > 0 ? one_block_us / best_us : 0.0},
          {"tried", t}, {"budget_hit", budget_hit}};
}

nlohmann::json FlashDirect::to_json() const {
  nlohmann::json t = nlohmann::json::array();
  for (const auto& [w, us] : tried) t.push_back({{"workgroup", w}, {"us", us}});
  return {{"workgroup", workgroup}, {"tried", t}};
}

FlashResult search_flash(gpu::KernelCache& kernels, KernelTimer& timer, const formats::LlmShape& shape,
                         const std::vector<uint32_t>& positions, const FlashSearch& options, Clock::time_point deadline) {
  const gpu::Device& device = kernels.device();
  const uint32_t heads = uint32_t(shape.heads), kv = uint32_t(shape.kv_heads), D = uint32_t(shape.head_dim);
  const uint32_t QKV = uint32_t(shape.qkv_rows()), row = D + options.padding;
  kernels::AttentionConfig ac{.heads = heads, .kv_heads = kv, .head_dim = D, .padding = options.padding, .q_stride = QKV,
                              .q_offset = 0, .subgroups = device.has_subgroups(), .max_blocks = options.max_blocks};
  // One attention per DIRECT width, from the adapter's widest down to the tile workgroup; the
  // partials and combine kernels are the same in all. The general kernel has one width.
  ac.direct_workgroup = kernels::widest_direct_workgroup(device);
  std::vector<kernels::AttentionDecode> attns;
  attns.emplace_back(kernels, ac);
  std::vector<uint32_t> widths{attns.front().direct_threads()};
  for (uint32_t w = widths.front() / 2; w >= ac.workgroup; w /= 2) {
    ac.direct_workgroup = w;
    attns.emplace_back(kernels, ac);
    widths.push_back(w);
  }
  uint32_t longest = 0;
  for (uint32_t p : positions) longest = std::max(longest, p);
  const uint64_t cache_floats = uint64_t(std::max<uint32_t>(1, longest)) * kv * row;
  gpu::Buffer q = device.create_storage(uint64_t(QKV) * 4, "tune.q");
  gpu::Buffer k_cache = device.create_storage(cache_floats * 4, "tune.k_cache");
  gpu::Buffer v_cache = device.create_storage(cache_floats * 4, "tune.v_cache");
  gpu::Buffer out = device.create_storage(uint64_t(heads) * D * 4, "tune.attn_out");
  gpu::Buffer step = kernels::create_step_buffer(device, "tune.step");
  device.upload(q, std::span<const float>(random_input(QKV, 5)));
  device.upload(k_cache, std::span<const float>(random_input(cache_floats, 6)));
  device.upload(v_cache, std::span<const float>(random_input(cache_floats, 7)));
  std::vector<kernels::AttentionDecode::Groups> groups;
  for (const auto& a : attns) groups.push_back(a.bind({&q}, {&k_cache}, {&v_cache}, {&out}, {&step}));

  auto output = [&](size_t i, uint32_t blocks) {  // attention i's output at that block count
    gpu::Recorder rec(device);
    attns[i].record(rec, groups[i], blocks);
    rec.submit();
    return device.download_as<float>(out);
  };
  FlashResult res;
  size_t chosen = 0;  // the fastest width at the shortest position
  for (uint32_t P : positions) {
    FlashPoint fp;
    fp.positions = P;
    if (P == 0) continue;
    kernels::upload_step(device, step, {.start = P - 1, .rows = 1});
    if (res.direct.tried.empty() && widths.size() > 1) {  // the shortest position: where one block competes
      const auto widest = output(0, 1);
      double best = 0;
      for (size_t i = 0; i < attns.size(); i++) {
        if (i > 0 && rel_l2(output(i, 1), widest) > kRejectRelL2) {
          res.direct.tried.push_back({widths[i], -1.0});  // rejected: not the widest's output
          continue;
        }
        double us = timer.time_us([&](gpu::Recorder& rec) { attns[i].record(rec, groups[i], 1); });
        res.direct.tried.push_back({widths[i], us});
        if (i == 0 || us < best) {
          best = us;
          chosen = i;
        }
      }
      res.direct.workgroup = widths[chosen];
    }
    const auto& attn = attns[chosen];
    const auto& g = groups[chosen];
    const auto ref = output(chosen, 1);
    fp.one_block_us = timer.time_us([&](gpu::Recorder& rec) { attn.record(rec, g, 1); });
    fp.best_us = fp.one_block_us;
    fp.tried.push_back({1, fp.one_block_us});
    for (uint32_t b = 2; b <= options.max_blocks && b <= P; b *= 2) {
      if (Clock::now() >= deadline) {
        fp.budget_hit = true;
        break;
      }
      if (rel_l2(output(chosen, b), ref) > kRejectRelL2) {
        fp.tried.push_back({b, -1.0});
        continue;
      }
      double us = timer.time_us([&](gpu::Recorder& rec) { attn.record(rec, g, b); });
      fp.tried.push_back({b, us});
      if (us < fp.best_us) {
        fp.best_us = us;
        fp.best_blocks = b;
      }
    }
    res.points.push_back(fp);
  }
  return res;
}

}  // namespace ember::tune
