#include "kernels/matvec_q4.h"

#include <bit>

#include "common/error.h"

namespace ember::kernels {
namespace {

// Mirrors `Params` in matvec_q4.wgsl.
struct MatvecParams {
  uint32_t rows, cols, pad;
  float eps;
};
static_assert(sizeof(MatvecParams) == 16);

// Weight blocks a shared_x lane holds in registers (MAX_HELD in matvec_q4.wgsl).
constexpr uint32_t kMaxHeldBlocks = 16;

// Weight rows per output row: gate and up (gated), B, C and x (conv step), or one.
uint32_t weight_row_sets(const MatvecConfig& config) { return config.gated ? 2 : config.conv ? 3 : 1; }

void check_geometry(const MatvecGeometry& g, const MatvecConfig& config, const gpu::Device& device, const std::string& where) {
  const uint32_t row_sets = weight_row_sets(config);
  const uint32_t lanes = g.subgroup_size * g.subgroups_per_row;
  auto fail = [&](const std::string& what, const std::string& fix) { throw Error(what, where, fix); };
  if (g.workgroup_size == 0 || g.subgroup_size == 0 || g.subgroups_per_row == 0 || g.rows_per_subgroup == 0)
    fail("geometry has a zero field", "give workgroupSize, subgroupSize, rowsPerSubgroup, subgroupsPerRow >= 1");
  if (!std::has_single_bit(lanes))
    fail("subgroupSize * subgroupsPerRow = " + std::to_string(lanes) + " is not a power of two", "use powers of two");
  if (g.workgroup_size % lanes != 0)
    fail("workgroupSize " + std::to_string(g.workgroup_size) + " is not a multiple of subgroupSize * subgroupsPerRow = " +
             std::to_string(lanes),
         "pick a workgroupSize that holds whole lane groups");
  if (g.rows_per_subgroup > 8) fail("rowsPerSubgroup " + std::to_string(g.rows_per_subgroup) + " is above 8", "use 1..8");
  if (g.rows_per_subgroup > lanes)  // lane r of a group stores row r
    fail("rowsPerSubgroup " + std::to_string(g.rows_per_subgroup) + " is above the lane group's " + std::to_string(lanes) + " lanes",
         "use at most subgroupSize x subgroupsPerRow rows");
  const WGPULimits& lim = device.limits();
  if (g.workgroup_size > lim.maxComputeInvocationsPerWorkgroup || g.workgroup_size > lim.maxComputeWorkgroupSizeX)
    fail("workgroupSize " + std::to_string(g.workgroup_size) + " exceeds this device's limit of " +
             std::to_string(lim.maxComputeInvocationsPerWorkgroup) + " invocations",
         "use a smaller workgroupSize");
  const uint32_t reduced_rows = g.rows_per_subgroup * row_sets;
  const bool shared_x = config.variant == Q4Variant::shared_x;
  uint64_t shared = uint64_t(g.workgroup_size) * reduced_rows * 4 + (shared_x ? uint64_t(config.cols) * 4 : 0);
  if (shared > lim.maxComputeWorkgroupStorageSize)
    fail((row_sets > 1 ? std::to_string(row_sets) + " * " : "") + "workgroupSize * rowsPerSubgroup" + (shared_x ? " (+ the staged input)" : "") + " needs " +
             std::to_string(shared) + " bytes of workgroup memory, above the device's " + std::to_string(lim.maxComputeWorkgroupStorageSize),
         "lower workgroupSize or rowsPerSubgroup");
  if (shared_x) {
    const uint32_t held = (config.cols / 32 + lanes - 1) / lanes * reduced_rows;
    if (held > kMaxHeldBlocks)
      fail("shared_x would hold " + std::to_string(held) + " weight blocks per lane (ceil(cols / 32 / lanes) x rows" +
               (row_sets > 1 ? " x " + std::to_string(row_sets) : "") + "), above " + std::to_string(kMaxHeldBlocks),
           "use more lanes per row (subgroupSize x subgroupsPerRow) or fewer rowsPerSubgroup");
  }
}

}  // namespace

MatvecQ4::MatvecQ4(gpu::KernelCache& kernels, const MatvecConfig& config) : kernels_(kernels), config_(config) {
  const gpu::Device& device = kernels.device();
  const std::string where = "matvec_q4 " + std::to_string(config.rows) + "x" + std::to_string(config.cols);
  if (config.rows == 0 || config.cols == 0 || config.cols % 32 != 0)
    throw Error("shape " + std::to_string(config.rows) + "x" + std::to_string(config.cols) + " is not supported", where,
                "rows >= 1 and cols a positive multiple of 32");
  if (config.gated && config.mode == OutputMode::accumulate)
    throw Error("a gated matvec cannot accumulate", where, "use overwrite mode for the gate_up matvec");
  if (config.gated && config.asymmetric) throw Error("a gated matvec has no zero points", where, "use a symmetric gate_up matrix");
  if (config.conv && (config.gated || config.asymmetric || config.mode == OutputMode::accumulate))
    throw Error("a conv-step matvec is symmetric, not gated, in overwrite mode", where, "use the conv in_proj matrix alone");
  if (config.norm_input && !(config.eps > 0)) throw Error("norm epsilon " + std::to_string(config.eps) + " is not positive", where, "pass the model's normEps");
  check_geometry(config.geometry, config, device, where);
  const MatvecGeometry& g = config.geometry;
  gpu::KernelKey key{.file = "matvec_q4.wgsl",
                     .constants = {{"WG", g.workgroup_size},
                                   {"SG", g.subgroup_size},
                                   {"RPS", g.rows_per_subgroup},
                                   {"SPR", g.subgroups_per_row},
                                   {"BLOCKS", config.cols / 32}}};
  if (config.variant != Q4Variant::carried) key.defines.insert("V3_BOTH");
  if (config.variant == Q4Variant::shared_x) key.defines.insert("SHARED_X");
  if (config.variant == Q4Variant::split_block) {
    if (g.subgroup_size * g.subgroups_per_row < 8)
      throw Error("split_block needs at least 8 lanes per row (subgroupSize x subgroupsPerRow)", where, "use another variant or a wider lane group");
    key.defines.insert("SPLIT_BLOCK");
  }
  if (config.asymmetric) key.defines.insert("ASYMMETRIC");
  if (config.mode == OutputMode::accumulate) key.defines.insert("ACCUMULATE");
  if (config.gated) key.defines.insert("GATED");
  if (config.conv) key.defines.insert("CONV");
  if (config.norm_input) key.defines.insert("NORM_INPUT");
  if (config.prefetch) key.defines.insert("PREFETCH");
  if (use_subgroups(device, config.reduction, where)) key.defines.insert("SUBGROUPS");
  kernel_ = &kernels.get(key);
  uint32_t max_dim = config.max_workgroups_per_dim ? config.max_workgroups_per_dim : device.limits().maxComputeWorkgroupsPerDimension;
  uint32_t per_wg = g.rows_per_workgroup();
  grid_ = split_grid((uint64_t(config.rows) + per_wg - 1) / per_wg, max_dim, where);
}

Bound MatvecQ4::bind(const Q4Matrix& w, gpu::Binding x, gpu::Binding y, gpu::Binding norm_weight, gpu::Binding conv_taps,
                     gpu::Binding conv_state, const Q4Matrix* next) const {
  const std::string where = kernel_->label();
  check_q4_matrix(w, weight_row_sets(config_) * config_.rows, config_.cols, config_.asymmetric, where);
  if (config_.conv) {
    require_binding(conv_taps, uint64_t(config_.rows) * 12, "conv taps", where);
    require_binding(conv_state, uint64_t(config_.rows) * 8, "conv state", where);
  } else if (conv_taps.buffer || conv_state.buffer) {
    throw Error("conv taps or state were bound to a matvec without conv", where, "set MatvecConfig::conv");
  }
  if (config_.norm_input) require_binding(norm_weight, uint64_t(config_.cols) * 4, "norm weight", where);
  else if (norm_weight.buffer) throw Error("a norm weight was bound to a matvec without norm_input", where, "set MatvecConfig::norm_input");
  require_binding(x, uint64_t(config_.cols) * 4, "x", where);
  require_binding(y, uint64_t(config_.rows) * 4, "y", where);
  Bound b;
  b.params = kernels_.device().create_uniform(MatvecParams{config_.rows, config_.cols, 0, config_.eps}, "matvec_q4 params");
  std::vector<gpu::Binding> bindings{w.quant, w.scales, x, y, {&b.params}};
  if (config_.asymmetric) bindings.push_back(w.zero_points);
  if (config_.norm_input) bindings.push_back(norm_weight);
  if (config_.conv) {
    bindings.push_back(conv_taps);
    bindings.push_back(conv_state);
  }
  Grid grid = grid_;
  if (config_.prefetch != (next != nullptr))
    throw Error(next ? "a prefetch matrix was bound to a matvec without prefetch" : "a prefetching matvec needs the matrix to prefetch", where,
                next ? "set MatvecConfig::prefetch" : "pass the next matvec's weights");
  if (next) {
    // The kernel's PF_PER_THREAD * WG vec4 per prefetch workgroup.
    const uint64_t per_group = 8ull * 16 * config_.geometry.workgroup_size;
    const uint64_t pf_groups = (binding_bytes(next->quant) + per_group - 1) / per_group + (binding_bytes(next->scales) + per_group - 1) / per_group;
    const uint32_t per_wg = config_.geometry.rows_per_workgroup();
    const uint32_t max_dim = config_.max_workgroups_per_dim ? config_.max_workgroups_per_dim : kernels_.device().limits().maxComputeWorkgroupsPerDimension;
    grid = split_grid((uint64_t(config_.rows) + per_wg - 1) / per_wg + pf_groups, max_dim, where);
    bindings.push_back(next->quant);
    bindings.push_back(next->scales);
  }
  b.group = kernels_.bind(*kernel_, bindings);
  b.groups_x = grid.x;
  b.groups_y = grid.y;
  return b;
}

void MatvecQ4::record(gpu::Recorder& rec, const Bound& bound) const {
  rec.dispatch(*kernel_, bound.group, bound.groups_x, bound.groups_y);
}

}  // namespace ember::kernels
