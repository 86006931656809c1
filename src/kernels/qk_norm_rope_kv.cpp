#include "kernels/qk_norm_rope_kv.h"

#include <bit>

#include "common/error.h"
#include "kernels/step.h"

namespace ember::kernels {
namespace {

// Mirrors `Params` in qk_norm_rope_kv.wgsl.
struct Params {
  uint32_t heads, kv_heads, head_dim, row, stride, q_offset, k_offset, v_offset;
  float eps;
  uint32_t cache_stride, pad0, pad1;
};
static_assert(sizeof(Params) == 48);

}  // namespace

QkNormRopeKv::QkNormRopeKv(gpu::KernelCache& kernels, const QkNormRopeKvConfig& config) : kernels_(kernels), config_(config) {
  const std::string where = "qk_norm_rope_kv";
  QkNormRopeKvConfig& c = config_;
  if (c.heads == 0 || c.kv_heads == 0 || c.head_dim == 0 || c.head_dim % 2 != 0)
    throw Error("heads " + std::to_string(c.heads) + ", kv_heads " + std::to_string(c.kv_heads) + ", head_dim " + std::to_string(c.head_dim) +
                    " is not supported",
                where, "heads and kv_heads >= 1, head_dim even");
  if (!std::has_single_bit(c.workgroup) || c.workgroup > kernels.device().limits().maxComputeInvocationsPerWorkgroup)
    throw Error("workgroup " + std::to_string(c.workgroup) + " is not a power of two the device runs", where, "use 64");
  if (!(c.eps > 0)) throw Error("norm epsilon " + std::to_string(c.eps) + " is not positive", where, "pass the model's normEps");
  if (c.k_offset == 0) c.k_offset = c.q_offset + c.heads * c.head_dim;
  if (c.v_offset == 0) c.v_offset = c.k_offset + c.kv_heads * c.head_dim;
  if (c.stride == 0) c.stride = (c.heads + 2 * c.kv_heads) * c.head_dim;
  gpu::KernelKey key{.file = "qk_norm_rope_kv.wgsl", .constants = {{"WG", c.workgroup}}};
  if (use_subgroups(kernels.device(), c.reduction, where)) key.defines.insert("SUBGROUPS");
  kernel_ = &kernels.get(key);
  params_ = kernels.device().create_uniform(
      Params{c.heads, c.kv_heads, c.head_dim, row(), c.stride, c.q_offset, c.k_offset, c.v_offset, c.eps, c.cache_stride, 0, 0}, "qk_norm_rope_kv params");
}

gpu::BindGroup QkNormRopeKv::bind(gpu::Binding qkv, gpu::Binding q_norm, gpu::Binding k_norm, gpu::Binding cos, gpu::Binding sin,
                                  gpu::Binding k_cache, gpu::Binding v_cache, gpu::Binding step) const {
  const std::string where = kernel_->label();
  require_binding(q_norm, uint64_t(config_.head_dim) * 4, "q norm weight", where);
  require_binding(k_norm, uint64_t(config_.head_dim) * 4, "k norm weight", where);
  require_binding(k_cache, uint64_t(config_.kv_heads) * row() * 4, "k cache", where);
  require_binding(v_cache, uint64_t(config_.kv_heads) * row() * 4, "v cache", where);
  return kernels_.bind(*kernel_, {qkv, q_norm, k_norm, cos, sin, k_cache, v_cache, {&params_}, step});
}

void QkNormRopeKv::record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T, uint32_t sequences) const {
  if (T == 0 || sequences == 0) return;
  if (sequences > 1 && T != 1) throw Error("several sequences step one token each", "QkNormRopeKv::record");
  rec.dispatch(*kernel_, group, config_.heads + 2 * config_.kv_heads, checked_groups(kernels_.device(), T, "QkNormRopeKv"),
               checked_groups(kernels_.device(), sequences, "QkNormRopeKv"));
}

}  // namespace ember::kernels
