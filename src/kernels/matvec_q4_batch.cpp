#include "kernels/matvec_q4_batch.h"

#include <bit>

#include "common/error.h"

namespace ember::kernels {
namespace {

// Mirrors `Params` in matvec_q4_batch.wgsl.
struct MatvecBatchParams {
  uint32_t rows, cols, blocks, vectors;
};
static_assert(sizeof(MatvecBatchParams) == 16);

}  // namespace

MatvecBatchQ4::MatvecBatchQ4(gpu::KernelCache& kernels, const MatvecBatchConfig& config) : kernels_(kernels), config_(config) {
  const gpu::Device& device = kernels.device();
  const std::string where = "matvec_q4_batch " + std::to_string(config.rows) + "x" + std::to_string(config.cols);
  auto fail = [&](const std::string& what, const std::string& fix) { throw Error(what, where, fix); };
  if (config.rows == 0 || config.cols == 0 || config.cols % 32 != 0)
    fail("shape " + std::to_string(config.rows) + "x" + std::to_string(config.cols) + " is not supported",
         "rows >= 1 and cols a positive multiple of 32");
  if (config.max_vectors == 0 || config.max_vectors > kMaxVectors)
    fail("max_vectors " + std::to_string(config.max_vectors) + " is outside 1.." + std::to_string(kMaxVectors),
         "split larger batches over several dispatches");
  if (config.lanes < 8 || !std::has_single_bit(config.lanes) || config.workgroup_size % config.lanes != 0)
    fail("lanes " + std::to_string(config.lanes) + " is not a power of two >= 8 dividing workgroup size " +
             std::to_string(config.workgroup_size),
         "use e.g. 32 lanes and a workgroup of 256");
  const WGPULimits& lim = device.limits();
  if (config.workgroup_size > lim.maxComputeInvocationsPerWorkgroup || config.workgroup_size > lim.maxComputeWorkgroupSizeX)
    fail("workgroup size " + std::to_string(config.workgroup_size) + " exceeds this device's limit", "use a smaller workgroup");
  const uint64_t shared = uint64_t(config.workgroup_size) * config.max_vectors * 4;
  if (shared > lim.maxComputeWorkgroupStorageSize)
    fail("workgroup size x max_vectors needs " + std::to_string(shared) + " bytes of workgroup memory, above the device's " +
             std::to_string(lim.maxComputeWorkgroupStorageSize),
         "lower the workgroup size or max_vectors");
  gpu::KernelKey key{.file = "matvec_q4_batch.wgsl",
                     .constants = {{"WG", config.workgroup_size}, {"L", config.lanes}, {"NV", config.max_vectors}}};
  if (config.asymmetric) key.defines.insert("ASYMMETRIC");
  if (config.mode == OutputMode::accumulate) key.defines.insert("ACCUMULATE");
  if (use_subgroups(device, config.reduction, where)) key.defines.insert("SUBGROUPS");
  kernel_ = &kernels.get(key);
  const uint32_t max_dim = config.max_workgroups_per_dim ? config.max_workgroups_per_dim : lim.maxComputeWorkgroupsPerDimension;
  const uint32_t per_wg = config.workgroup_size / config.lanes;
  grid_ = split_grid((uint64_t(config.rows) + per_wg - 1) / per_wg, max_dim, where);
}

Bound MatvecBatchQ4::bind(const Q4Matrix& w, gpu::Binding x, gpu::Binding y, uint32_t vectors) const {
  const std::string where = kernel_->label();
  if (vectors == 0 || vectors > config_.max_vectors)
    throw Error(std::to_string(vectors) + " vectors is outside 1.." + std::to_string(config_.max_vectors), where,
                "bind at most max_vectors vectors per dispatch");
  check_q4_matrix(w, config_.rows, config_.cols, config_.asymmetric, where);
  require_binding(x, uint64_t(vectors) * config_.cols * 4, "x", where);
  require_binding(y, uint64_t(vectors) * config_.rows * 4, "y", where);
  Bound b;
  b.params = kernels_.device().create_uniform(MatvecBatchParams{config_.rows, config_.cols, config_.cols / 32, vectors},
                                              "matvec_q4_batch params");
  std::vector<gpu::Binding> bindings{w.quant, w.scales, x, y, {&b.params}};
  if (config_.asymmetric) bindings.push_back(w.zero_points);
  b.group = kernels_.bind(*kernel_, bindings);
  b.groups_x = grid_.x;
  b.groups_y = grid_.y;
  return b;
}

void MatvecBatchQ4::record(gpu::Recorder& rec, const Bound& bound) const {
  rec.dispatch(*kernel_, bound.group, bound.groups_x, bound.groups_y);
}

}  // namespace ember::kernels
