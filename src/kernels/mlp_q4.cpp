#include "kernels/mlp_q4.h"

#include <bit>

#include "common/error.h"

namespace ember::kernels {
namespace {

// Mirror `Params` in mlp_q4.wgsl and fold_partials.wgsl.
struct MlpParams {
  uint32_t hidden, ffn, hblocks;
  float eps;
};
static_assert(sizeof(MlpParams) == 16);
struct FoldParams {
  uint32_t width, count, pad0, pad1;
};
static_assert(sizeof(FoldParams) == 16);

// The fold: 256 lanes, 16 columns per workgroup (64 workgroups for hidden 1024, 16 lane rows
// each summing every 16th partial).
constexpr uint32_t kFoldWorkgroup = 256, kFoldColumns = 16;

}  // namespace

MlpQ4::MlpQ4(gpu::KernelCache& kernels, const MlpConfig& config) : kernels_(kernels), config_(config) {
  const gpu::Device& device = kernels.device();
  const std::string where = "mlp_q4 hidden " + std::to_string(config.hidden) + " ffn " + std::to_string(config.ffn);
  if (config.hidden == 0 || config.hidden % 32 != 0 || config.ffn == 0)
    throw Error("shape is not supported", where, "hidden a positive multiple of 32, ffn >= 1");
  const uint32_t wg = config.workgroup_size;
  if (config.slices == 0 || wg == 0 || config.lanes == 0 || !std::has_single_bit(config.lanes) || wg % config.lanes != 0)
    throw Error("slices " + std::to_string(config.slices) + ", workgroup " + std::to_string(wg) + ", lanes " +
                    std::to_string(config.lanes) + " is not a valid geometry",
                where, "slices >= 1 and lanes a power of two dividing the workgroup size");
  const WGPULimits& lim = device.limits();
  rows_per_slice_ = (config.ffn + config.slices - 1) / config.slices;
  uint64_t shared = (uint64_t(wg) + 2ull * rows_per_slice_) * 4;
  if (wg > lim.maxComputeInvocationsPerWorkgroup || wg > lim.maxComputeWorkgroupSizeX || shared > lim.maxComputeWorkgroupStorageSize)
    throw Error("workgroup " + std::to_string(wg) + " with " + std::to_string(rows_per_slice_) + " rows per slice exceeds this device's limits",
                where, "use a smaller workgroup or more slices");
  if (config.slices > lim.maxComputeWorkgroupsPerDimension)
    throw Error("too many slices", where, "use at most maxComputeWorkgroupsPerDimension slices");
  const uint32_t words = config.hidden / 8;
  ksplit_ = words < wg ? wg / words : 1;
  partial_count_ = config.slices * ksplit_;

  gpu::KernelKey key{.file = "mlp_q4.wgsl",
                     .constants = {{"WG", wg}, {"L", config.lanes}, {"PER", rows_per_slice_}, {"KSPLIT", ksplit_}}};
  if (use_subgroups(device, config.reduction, where)) {
    key.defines.insert("SUBGROUPS");
    if (config.lanes <= device.subgroup_size()) key.defines.insert("LANES_IN_SUBGROUP");
  }
  if (config.norm_input) {
    if (!(config.eps > 0)) throw Error("norm epsilon " + std::to_string(config.eps) + " is not positive", where, "pass the model's normEps");
    key.defines.insert("NORM_INPUT");
  }
  if (config.half_product) {
    if (!device.has_f16()) throw Error("f16 products need shader-f16, which this device lacks", where, "turn mlpHalfProduct off");
    key.defines.insert("HALF_PRODUCT");
  }
  slice_kernel_ = &kernels.get(key);
  fold_kernel_ = &kernels.get({.file = "fold_partials.wgsl", .constants = {{"WG", kFoldWorkgroup}, {"COLS", kFoldColumns}}});
  partials_ = device.create_storage(uint64_t(partial_count_) * config.hidden * 4, "mlp_q4 partials");
}

MlpBound MlpQ4::bind(const Q4Matrix& gate_up, const Q4Matrix& kquant, gpu::Binding h, gpu::Binding x, gpu::Binding norm_weight) const {
  const std::string where = slice_kernel_->label();
  check_q4_matrix(gate_up, 2 * config_.ffn, config_.hidden, false, where + ", gate_up");
  check_q4_matrix(kquant, config_.ffn, config_.hidden, false, where + ", kquant");
  require_binding(h, uint64_t(config_.hidden) * 4, "h", where);
  require_binding(x, uint64_t(config_.hidden) * 4, "x", where);
  if (config_.norm_input) require_binding(norm_weight, uint64_t(config_.hidden) * 4, "norm weight", where);
  else if (norm_weight.buffer) throw Error("a norm weight was bound to an MLP without norm_input", where, "set MlpConfig::norm_input");
  const gpu::Device& device = kernels_.device();
  MlpBound b;
  b.slices.params = device.create_uniform(MlpParams{config_.hidden, config_.ffn, config_.hidden / 32, config_.eps}, "mlp_q4 params");
  std::vector<gpu::Binding> slice_bindings{gate_up.quant, gate_up.scales, kquant.quant, kquant.scales, h, {&partials_}, {&b.slices.params}};
  if (config_.norm_input) slice_bindings.push_back(norm_weight);
  b.slices.group = kernels_.bind(*slice_kernel_, slice_bindings);
  b.slices.groups_x = config_.slices;
  b.fold.params = device.create_uniform(FoldParams{config_.hidden, partial_count_, 0, 0}, "fold_partials params");
  b.fold.group = kernels_.bind(*fold_kernel_, {{&partials_}, x, {&b.fold.params}});
  b.fold.groups_x = (config_.hidden + kFoldColumns - 1) / kFoldColumns;
  return b;
}

void MlpQ4::record(gpu::Recorder& rec, const MlpBound& bound) const {
  rec.dispatch(*slice_kernel_, bound.slices.group, bound.slices.groups_x);
  rec.dispatch(*fold_kernel_, bound.fold.group, bound.fold.groups_x);
}

}  // namespace ember::kernels
