#include "kernels/matmul_q4.h"

#include "common/error.h"

namespace ember::kernels {
namespace {

// Mirrors `Params` in matmul_q4.wgsl.
struct MatmulParams {
  uint32_t rows, cols, tokens, k_chunk;
};
static_assert(sizeof(MatmulParams) == 16);

// Mirrors `Params` in matmul_q4_split_sum.wgsl.
struct SplitSumParams {
  uint32_t n, splits, pad0, pad1;
};
static_assert(sizeof(SplitSumParams) == 16);

constexpr uint32_t kSumWorkgroup = 256;
constexpr uint32_t kMaxSplits = 16;  // beyond that the scratch outgrows any gain

// Columns per split: whole 32-blocks (a multiple of every K step).
uint32_t split_chunk(uint32_t cols, uint32_t k_splits) {
  const uint32_t blocks = (cols + 31) / 32;
  return 32 * ((blocks + k_splits - 1) / k_splits);
}
uint32_t split_count(uint32_t cols, uint32_t k_splits) {
  const uint32_t chunk = split_chunk(cols, k_splits);
  return (cols + chunk - 1) / chunk;
}

}  // namespace

std::string matmul_geometry_name(const MatmulGeometry& g) {
  std::string name = std::to_string(g.wg_tokens) + "x" + std::to_string(g.wg_rows) + "k" + std::to_string(g.k_step);
  if (g.micro == 4) name += "m4";
  if (g.vec4) name += "v4";
  if (g.k_splits > 1) {
    name += 's';
    name += std::to_string(g.k_splits);
  }
  return name;
}

uint64_t matmul_split_floats(const MatmulConfig& config, uint32_t tokens) {
  if (config.geometry.k_splits <= 1) return 0;
  return uint64_t(split_count(config.cols, config.geometry.k_splits)) * tokens * config.rows;
}

namespace {
// Padded by one element (vec4: one vec4) per K row.
uint64_t shared_bytes(const MatmulGeometry& g) {
  const uint32_t pad = g.vec4 ? 4 : 1;
  return 4ull * g.k_step * (g.tile_tokens() + pad + g.tile_rows() + pad);
}
}  // namespace

bool matmul_gated_fits(const MatmulGeometry& g) { return g.k_splits == 1 && !(g.vec4 && g.micro == 4); }

bool matmul_geometry_fits(const MatmulGeometry& g, const WGPULimits& lim) {
  const uint64_t threads = uint64_t(g.wg_tokens) * g.wg_rows;
  return threads >= 1 && (g.k_step == 8 || g.k_step == 16 || g.k_step == 32) && (g.micro == 8 || g.micro == 4) && g.k_splits >= 1 &&
         g.k_splits <= kMaxSplits && threads <= lim.maxComputeInvocationsPerWorkgroup &&
         threads <= lim.maxComputeWorkgroupSizeX && shared_bytes(g) <= lim.maxComputeWorkgroupStorageSize;
}

MatmulQ4::MatmulQ4(gpu::KernelCache& kernels, const MatmulConfig& config) : kernels_(kernels), config_(config) {
  const std::string where = std::string(config.kmajor ? "matmul_q4 (k-major) " : "matmul_q4 ") + std::to_string(config.rows) + "x" +
                            std::to_string(config.cols);
  const bool blocks_ok = config.kmajor ? config.rows % 32 == 0 : config.cols % 32 == 0;
  if (config.rows == 0 || config.cols == 0 || !blocks_ok)
    throw Error("shape " + std::to_string(config.rows) + "x" + std::to_string(config.cols) + " is not supported", where,
                config.kmajor ? "k-major matrices need rows (outputs) a positive multiple of 32"
                              : "rows >= 1 and cols a positive multiple of 32");
  const MatmulGeometry& g = config.geometry;
  const std::string name = matmul_geometry_name(g);
  if (g.wg_tokens == 0 || g.wg_rows == 0 || (g.k_step != 8 && g.k_step != 16 && g.k_step != 32) || (g.micro != 8 && g.micro != 4) ||
      g.k_splits == 0 || g.k_splits > kMaxSplits)
    throw Error("geometry " + name + " is not supported", where,
                "use positive thread counts, a K step of 8, 16 or 32, micro 4 or 8 and 1 to " + std::to_string(kMaxSplits) + " K splits");
  if (!matmul_geometry_fits(g, kernels.device().limits()))
    throw Error("geometry " + name + " needs " + std::to_string(uint64_t(g.wg_tokens) * g.wg_rows) + " threads and " +
                    std::to_string(shared_bytes(g)) +
                    " bytes of workgroup memory, above this device's limits",
                where, "use fewer threads or a smaller K step");
  if (config.kmajor && g.tile_rows() % 8 != 0)
    throw Error("geometry " + name + " has " + std::to_string(g.tile_rows()) + " rows per tile", where,
                "k-major weights need a multiple of 8 rows per tile (one word): use an even wg_rows");
  if (config.gated && (config.kmajor || config.mode != OutputMode::overwrite || config.rows % 2 != 0 || !matmul_gated_fits(g)))
    throw Error("the gated epilogue needs row-major W with an even row count, overwrite mode, no K split and not vec4 with micro 4", where,
                "run the product ungated and apply the activation separately");
  gpu::KernelKey key{.file = "matmul_q4.wgsl", .constants = {{"WG_T", g.wg_tokens}, {"WG_R", g.wg_rows}, {"KS", g.k_step}}};
  const bool split = g.k_splits > 1;
  if (split) key.defines.insert("SPLIT_K");
  else if (config.mode == OutputMode::accumulate) key.defines.insert("ACCUMULATE");
  if (config.kmajor) key.defines.insert("KMAJOR");
  if (g.micro == 4) key.defines.insert("MICRO4");
  if (g.vec4) key.defines.insert("VEC4");
  if (config.gated) key.defines.insert("GATED");
  kernel_ = &kernels.get(key);
  if (split) {
    gpu::KernelKey sum{.file = "matmul_q4_split_sum.wgsl", .constants = {{"WG", kSumWorkgroup}}};
    if (config.mode == OutputMode::accumulate) sum.defines.insert("ACCUMULATE");
    if (sum_vec4()) sum.defines.insert("VEC4");
    sum_kernel_ = &kernels.get(sum);
  }
}

MatmulBound MatmulQ4::bind(const Q4Matrix& w, gpu::Binding x, gpu::Binding y, uint32_t tokens, gpu::Binding partials) const {
  const std::string where = kernel_->label();
  if (tokens == 0) throw Error("token count is 0", where, "bind at least one token");
  if (config_.kmajor) check_q4_matrix(w, config_.cols, config_.rows, false, where);
  else check_q4_matrix(w, config_.rows, config_.cols, false, where);
  require_binding(x, uint64_t(tokens) * config_.cols * 4, "x", where);
  require_binding(y, uint64_t(tokens) * (config_.gated ? config_.rows / 2 : config_.rows) * 4, "y", where);
  const uint32_t max_dim = kernels_.device().limits().maxComputeWorkgroupsPerDimension;
  const MatmulGeometry& g = config_.geometry;
  // (GATED: F = rows / 2 outputs, tile_rows / 2 per workgroup: the same count.)
  uint64_t gx = (uint64_t(config_.rows) + g.tile_rows() - 1) / g.tile_rows();
  uint64_t gy = (uint64_t(tokens) + g.tile_tokens() - 1) / g.tile_tokens();
  if (gx > max_dim || gy > max_dim)
    throw Error("grid " + std::to_string(gx) + "x" + std::to_string(gy) + " exceeds maxComputeWorkgroupsPerDimension", where,
                "use larger tiles or fewer tokens per call");
  const bool split = sum_kernel_ != nullptr;
  const uint32_t chunk = split ? split_chunk(config_.cols, g.k_splits) : config_.cols;
  MatmulBound b;
  b.product.params = kernels_.device().create_uniform(MatmulParams{config_.rows, config_.cols, tokens, chunk}, "matmul_q4 params");
  b.product.groups_x = static_cast<uint32_t>(gx);
  b.product.groups_y = static_cast<uint32_t>(gy);
  if (!split) {
    b.product.group = kernels_.bind(*kernel_, {w.quant, w.scales, x, y, {&b.product.params}});
    return b;
  }
  const uint64_t n = uint64_t(tokens) * config_.rows / (sum_vec4() ? 4 : 1);  // in the sum's values
  require_binding(partials, 4 * matmul_split_floats(config_, tokens), "split-K partials", where);
  b.product.group = kernels_.bind(*kernel_, {w.quant, w.scales, x, partials, {&b.product.params}});
  const Grid grid = split_grid((n + kSumWorkgroup - 1) / kSumWorkgroup, max_dim, where);
  b.sum.params = kernels_.device().create_uniform(SplitSumParams{static_cast<uint32_t>(n), split_count(config_.cols, g.k_splits), 0, 0},
                                                  "matmul_q4 split sum params");
  b.sum.group = kernels_.bind(*sum_kernel_, {partials, y, {&b.sum.params}});
  b.sum.groups_x = grid.x;
  b.sum.groups_y = grid.y;
  return b;
}

void MatmulQ4::record(gpu::Recorder& rec, const MatmulBound& bound) const {
  const uint32_t splits = sum_kernel_ ? split_count(config_.cols, config_.geometry.k_splits) : 1;
  rec.dispatch(*kernel_, bound.product.group, bound.product.groups_x, bound.product.groups_y, splits);
  if (sum_kernel_) rec.dispatch(*sum_kernel_, bound.sum.group, bound.sum.groups_x, bound.sum.groups_y);
}

}  // namespace ember::kernels
