#include "kernels/matmul_q4.h"

#include "common/error.h"

namespace ember::kernels {
namespace {

// Mirrors `Params` in matmul_q4.wgsl.
struct MatmulParams {
  uint32_t rows, cols, blocks, tokens;
};
static_assert(sizeof(MatmulParams) == 16);

}  // namespace

MatmulQ4::MatmulQ4(gpu::KernelCache& kernels, const MatmulConfig& config) : kernels_(kernels), config_(config) {
  const std::string where = "matmul_q4 " + std::to_string(config.rows) + "x" + std::to_string(config.cols);
  if (config.rows == 0 || config.cols == 0 || config.cols % 32 != 0)
    throw Error("shape " + std::to_string(config.rows) + "x" + std::to_string(config.cols) + " is not supported", where,
                "rows >= 1 and cols a positive multiple of 32");
  if (config.tile_rows == 0 || config.tile_tokens == 0 || config.tile_rows % 4 || config.tile_tokens % 4)
    throw Error("tile " + std::to_string(config.tile_rows) + "x" + std::to_string(config.tile_tokens) + " is not a multiple of 4",
                where, "use tile sizes that are positive multiples of 4");
  const WGPULimits& lim = kernels.device().limits();
  uint32_t lanes = (config.tile_rows / 4) * (config.tile_tokens / 4);
  uint64_t shared = 32ull * (config.tile_rows + config.tile_tokens) * 4;
  if (lanes > lim.maxComputeInvocationsPerWorkgroup || lanes > lim.maxComputeWorkgroupSizeX ||
      shared > lim.maxComputeWorkgroupStorageSize)
    throw Error("tile " + std::to_string(config.tile_rows) + "x" + std::to_string(config.tile_tokens) + " needs " +
                    std::to_string(lanes) + " lanes and " + std::to_string(shared) + " bytes of workgroup memory, above this device's limits",
                where, "use smaller tiles");
  gpu::KernelKey key{.file = "matmul_q4.wgsl", .constants = {{"TR", config.tile_rows}, {"TT", config.tile_tokens}}};
  if (config.mode == OutputMode::accumulate) key.defines.insert("ACCUMULATE");
  kernel_ = &kernels.get(key);
}

Bound MatmulQ4::bind(const Q4Matrix& w, gpu::Binding x, gpu::Binding y, uint32_t tokens) const {
  const std::string where = kernel_->label();
  if (tokens == 0) throw Error("token count is 0", where, "bind at least one token");
  check_q4_matrix(w, config_.rows, config_.cols, false, where);
  require_binding(x, uint64_t(tokens) * config_.cols * 4, "x", where);
  require_binding(y, uint64_t(tokens) * config_.rows * 4, "y", where);
  const uint32_t max_dim = kernels_.device().limits().maxComputeWorkgroupsPerDimension;
  uint64_t gx = (uint64_t(config_.rows) + config_.tile_rows - 1) / config_.tile_rows;
  uint64_t gy = (uint64_t(tokens) + config_.tile_tokens - 1) / config_.tile_tokens;
  if (gx > max_dim || gy > max_dim)
    throw Error("grid " + std::to_string(gx) + "x" + std::to_string(gy) + " exceeds maxComputeWorkgroupsPerDimension", where,
                "use larger tiles or fewer tokens per call");
  Bound b;
  b.params = kernels_.device().create_uniform(MatmulParams{config_.rows, config_.cols, config_.cols / 32, tokens}, "matmul_q4 params");
  b.group = kernels_.bind(*kernel_, {w.quant, w.scales, x, y, {&b.params}});
  b.groups_x = static_cast<uint32_t>(gx);
  b.groups_y = static_cast<uint32_t>(gy);
  return b;
}

void MatmulQ4::record(gpu::Recorder& rec, const Bound& bound) const {
  rec.dispatch(*kernel_, bound.group, bound.groups_x, bound.groups_y);
}

}  // namespace ember::kernels
