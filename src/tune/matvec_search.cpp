#include "tune/matvec_search.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <set>

#include "common/error.h"
#include "formats/llm_layout.h"
#include "llm/cpu_kernel_defaults.h"
#include "tune/check.h"

namespace ember::tune {
namespace {

constexpr double kKneeSlack = 1.03;

bool same(const kernels::MatvecGeometry& a, const kernels::MatvecGeometry& b) {
  return a.workgroup_size == b.workgroup_size && a.subgroup_size == b.subgroup_size && a.rows_per_subgroup == b.rows_per_subgroup &&
         a.subgroups_per_row == b.subgroups_per_row;
}

}  // namespace

uint64_t MatrixShape::bytes() const {
  return formats::q4_quant_bytes(rows, cols) + formats::q4_scale_bytes(rows, cols) +
         (asymmetric ? formats::q4_zero_point_bytes(rows, cols) : 0);
}

std::vector<MatrixShape> matrix_shapes(const formats::LlmShape& shape) {
  using kernels::OutputMode;
  std::vector<MatrixShape> out;
  for (const auto& m : formats::llm_matrices(shape)) {
    auto it = std::find_if(out.begin(), out.end(), [&](const MatrixShape& s) { return s.key == m.shape_key; });
    if (it != out.end()) {
      it->count++;
      continue;
    }
    MatrixShape s;
    s.key = m.shape_key;
    s.prefix = m.name;
    s.rows = static_cast<uint32_t>(m.rows);
    s.cols = static_cast<uint32_t>(m.cols);
    s.asymmetric = m.asymmetric;
    const bool residual = s.key == "conv_out_proj" || s.key == "attn_o_proj" || s.key == "mlp_down";
    s.mode = residual ? OutputMode::accumulate : OutputMode::overwrite;
    s.count = 1;
    out.push_back(s);
  }
  return out;
}

std::string MatvecConfigChoice::describe() const {
  const auto& g = geometry;
  return std::string(kernels::q4_variant_name(variant)) + " wg" + std::to_string(g.workgroup_size) + " sg" +
         std::to_string(g.subgroup_size) + " r" + std::to_string(g.rows_per_subgroup) + " s" + std::to_string(g.subgroups_per_row);
}

nlohmann::json MatvecConfigChoice::to_json() const {
  const auto& g = geometry;
  return {{"variant", kernels::q4_variant_name(variant)},
          {"workgroupSize", g.workgroup_size},
          {"subgroupSize", g.subgroup_size},
          {"rowsPerSubgroup", g.rows_per_subgroup},
          {"subgroupsPerRow", g.subgroups_per_row}};
}

namespace {
nlohmann::json res_input_json(const std::optional<MatvecMeasurement>& m) {
  if (!m) return nullptr;
  nlohmann::json j = m->config.to_json();
  j["us"] = m->us;
  if (!m->rejected.empty()) j["rejected"] = m->rejected;
  return j;
}
}  // namespace

nlohmann::json MatvecShapeResult::to_json() const {
  nlohmann::json j = {{"shape", shape.key},
                      {"rows", shape.rows},
                      {"cols", shape.cols},
                      {"per_token", shape.count},
                      {"bytes", shape.bytes()},
                      {"default", reference.config.to_json()},
                      {"default_us", reference.us},
                      {"best", best.config.to_json()},
                      {"best_us", best.us},
                      {"speedup", best.us > 0 ? reference.us / best.us : 0.0},
                      {"best_gbps", best.us > 0 ? shape.bytes() / (best.us * 1e3) : 0.0},
                      {"input", res_input_json(input)},
                      {"step_choice", step_choice ? step_choice->config.to_json() : nlohmann::json()},
                      {"knee", MatvecConfigChoice{best.config.variant, knee}.to_json()},
                      {"tried", tried},
                      {"rejected", rejected},
                      {"invalid", invalid},
                      {"budget_hit", budget_hit}};
  nlohmann::json t = nlohmann::json::array();
  for (const auto& m : timed) t.push_back({{"config", m.config.describe()}, {"us", m.us}});
  j["timed"] = std::move(t);
  return j;
}

kernels::MatvecGeometry reference_geometry(const gpu::Device& device) {
  kernels::MatvecGeometry g;
  g.workgroup_size = 256;
  g.subgroup_size = std::max<uint32_t>(4, std::min<uint32_t>(32, device.subgroup_size()));
  g.rows_per_subgroup = 1;
  g.subgroups_per_row = 1;
  return g;
}

namespace {

// A CPU adapter runs a workgroup's invocations as SIMD lanes of one thread: workgroups of one to
// four subgroups, lane groups of half or one subgroup, 4 or 8 rows per group (the x block a lane
// loads serves them all), one lane group per row. The CPU default (llm::cpu_matvec_geometry) first,
// then v3_both, split_block and carried, each in a fixed shuffled order: a few dozen choices, which
// a tune's budget on a CPU covers where the GPU grid's hundreds would not.
std::vector<MatvecConfigChoice> cpu_grid(const gpu::Device& device) {
  const uint32_t sub = std::max<uint32_t>(4, std::min<uint32_t>(32, device.subgroup_size()));
  std::vector<MatvecConfigChoice> grid;
  for (auto variant : {kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::carried})
    for (uint32_t wg : {sub, 2 * sub, 4 * sub})
      for (uint32_t sg : {std::max<uint32_t>(2, sub / 2), sub})
        for (uint32_t rows : {4u, 8u}) {
          if (rows > sg || wg > device.limits().maxComputeInvocationsPerWorkgroup) continue;
          if (variant == kernels::Q4Variant::split_block && sg < 8) continue;  // eight lanes share a block
          grid.push_back({variant, {wg, sg, rows, 1}});
        }
  std::mt19937 rng(20261207);
  for (auto it = grid.begin(); it != grid.end();) {  // shuffle within each variant
    auto end = std::find_if(it, grid.end(), [&](const MatvecConfigChoice& c) { return c.variant != it->variant; });
    std::shuffle(it, end, rng);
    it = end;
  }
  grid.insert(grid.begin(), {kernels::Q4Variant::v3_both, llm::cpu_matvec_geometry(device)});
  return grid;
}

}  // namespace

std::vector<MatvecConfigChoice> matvec_space(const gpu::Device& device, const std::vector<MatvecConfigChoice>& first) {
  if (device.adapter().type == "CPU") {
    std::vector<MatvecConfigChoice> out = first;
    for (const auto& c : cpu_grid(device))
      if (!std::any_of(out.begin(), out.end(), [&](const MatvecConfigChoice& o) { return o.variant == c.variant && same(o.geometry, c.geometry); }))
        out.push_back(c);
    return out;
  }
  const uint32_t sub = std::max<uint32_t>(4, std::min<uint32_t>(32, device.subgroup_size()));
  std::set<uint32_t> widths{std::max<uint32_t>(4, sub / 2), sub, std::min<uint32_t>(64, sub * 2)};
  std::vector<MatvecConfigChoice> grid;
  for (auto variant : {kernels::Q4Variant::carried, kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::shared_x})
    for (uint32_t wg : {64u, 128u, 256u, 512u})
      for (uint32_t sg : widths)
        for (uint32_t rows : {1u, 2u, 4u, 8u})
          for (uint32_t per_row : {1u, 2u}) {
            if (wg % (sg * per_row) != 0 || wg > device.limits().maxComputeInvocationsPerWorkgroup) continue;
            if (variant == kernels::Q4Variant::split_block && sg * per_row < 8) continue;  // eight lanes share a block
            grid.push_back({variant, {wg, sg, rows, per_row}});
          }
  std::mt19937 rng(20261202);
  std::shuffle(grid.begin(), grid.end(), rng);
  // The variants that have won on measured GPUs first (shared_x on nearly every shape),
  // so a search cut short by its budget has covered them; the shuffled order within each.
  auto rank = [](kernels::Q4Variant v) {
    switch (v) {
      case kernels::Q4Variant::shared_x: return 0;
      case kernels::Q4Variant::v3_both:
      case kernels::Q4Variant::split_block: return 1;
      default: return 2;
    }
  };
  std::stable_sort(grid.begin(), grid.end(), [&](const MatvecConfigChoice& a, const MatvecConfigChoice& b) { return rank(a.variant) < rank(b.variant); });
  std::vector<MatvecConfigChoice> out = first;
  for (const auto& c : grid) {
    bool dup = std::any_of(out.begin(), out.end(), [&](const MatvecConfigChoice& o) { return o.variant == c.variant && same(o.geometry, c.geometry); });
    if (!dup) out.push_back(c);
  }
  return out;
}

MatvecShapeResult search_matvec(gpu::KernelCache& kernels, KernelTimer& timer, const MatrixShape& shape, const kernels::Q4Matrix& w,
                                const std::vector<MatvecConfigChoice>& space, Clock::time_point deadline,
                                const std::optional<MatvecConfigChoice>& input) {
  const gpu::Device& device = kernels.device();
  MatvecShapeResult res;
  res.shape = shape;
  const auto xs = random_input(shape.cols, 1234 + shape.rows);
  gpu::Buffer x = device.create_storage(uint64_t(shape.cols) * 4, "tune.x");
  gpu::Buffer y = device.create_storage(uint64_t(shape.rows) * 4, "tune.y");
  device.upload(x, std::span<const float>(xs));

  auto run = [&](const MatvecConfigChoice& c, const std::vector<float>* ref, std::vector<float>* out) {
    MatvecMeasurement m{c};
    kernels::MatvecConfig mc{.rows = shape.rows, .cols = shape.cols, .asymmetric = shape.asymmetric, .variant = c.variant,
                             .geometry = c.geometry, .mode = shape.mode};
    std::optional<kernels::MatvecQ4> mv;
    kernels::Bound bound;
    try {
      mv.emplace(kernels, mc);
      bound = mv->bind(w, {&x}, {&y});
    } catch (const Error& e) {
      m.rejected = std::string("invalid: ") + e.what();
      return m;
    }
    {  // output from zero, so accumulate mode compares too
      gpu::Recorder rec(device);
      rec.clear(y);
      mv->record(rec, bound);
      rec.submit();
    }
    auto got = device.download_as<float>(y, 0, shape.rows);
    if (ref) {
      m.rel_l2 = rel_l2(got, *ref);
      if (!(m.rel_l2 <= kRejectRelL2)) {
        m.rejected = "output differs from the reference (rel_l2 " + std::to_string(m.rel_l2) + ")";
        return m;
      }
    }
    if (out) *out = std::move(got);
    m.us = timer.time_us([&](gpu::Recorder& rec) { mv->record(rec, bound); });
    return m;
  };

  std::vector<float> ref_out;
  res.reference = run({kernels::Q4Variant::carried, reference_geometry(device)}, nullptr, &ref_out);
  if (!res.reference.rejected.empty())
    throw Error("the reference matvec cannot run: " + res.reference.rejected, "ember tune, " + shape.key);
  res.best = res.reference;
  res.tried = 1;
  auto is_input = [&](const MatvecConfigChoice& c) { return input && c.variant == input->variant && same(c.geometry, input->geometry); };
  if (is_input(res.reference.config)) res.input = res.reference;
  auto& usable = res.timed;
  usable.push_back(res.reference);
  for (const auto& c : space) {
    if (Clock::now() >= deadline) {
      res.budget_hit = true;
      break;
    }
    if (c.variant == res.reference.config.variant && same(c.geometry, res.reference.config.geometry)) continue;
    MatvecMeasurement m = run(c, &ref_out, nullptr);
    res.tried++;
    if (is_input(c)) res.input = m;
    if (m.rejected.rfind("invalid", 0) == 0) {
      res.invalid++;
      continue;
    }
    if (!m.rejected.empty()) {
      res.rejected++;
      continue;
    }
    usable.push_back(m);
    if (m.us < res.best.us) res.best = m;
  }
  // The knee: the smallest geometry (threads, then rows) within 3% of the best time.
  res.knee = res.best.config.geometry;
  uint64_t knee_size = UINT64_MAX;
  for (const auto& m : usable) {
    if (m.us > kKneeSlack * res.best.us) continue;
    uint64_t size = uint64_t(m.config.geometry.workgroup_size) * 16 + m.config.geometry.rows_per_subgroup;
    if (size < knee_size) {
      knee_size = size;
      res.knee = m.config.geometry;
    }
  }
  std::sort(usable.begin(), usable.end(), [](const auto& a, const auto& b) { return a.us < b.us; });
  return res;
}

}  // namespace ember::tune
