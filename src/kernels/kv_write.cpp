#include "kernels/kv_write.h"

#include "common/error.h"
#include "kernels/step.h"

namespace ember::kernels {
namespace {

struct Params {
  uint32_t kv_heads, head_dim, row, k_stride, k_offset, v_stride, v_offset, pad0;
};
static_assert(sizeof(Params) == 32);

}  // namespace

KvWrite::KvWrite(gpu::KernelCache& kernels, const KvWriteConfig& config) : kernels_(kernels), config_(config) {
  if (config_.kv_heads == 0 || config_.head_dim == 0) throw Error("kv_heads and head_dim must be positive", "KvWrite");
  const uint32_t dim = config_.kv_heads * config_.head_dim;
  if (config_.k_stride == 0) config_.k_stride = dim;
  if (config_.v_stride == 0) config_.v_stride = dim;
  kernel_ = &kernels.get({.file = "kv_write.wgsl", .constants = {{"WG", config_.workgroup}}});
  params_ = kernels.device().create_uniform(Params{config_.kv_heads, config_.head_dim, row(), config_.k_stride,
                                                   config_.k_offset, config_.v_stride, config_.v_offset, 0},
                                            "kv_write params");
}

gpu::BindGroup KvWrite::bind(gpu::Binding k, gpu::Binding v, gpu::Binding k_cache, gpu::Binding v_cache,
                             gpu::Binding step) const {
  return kernels_.bind(*kernel_, {k, v, k_cache, v_cache, {&params_}, step});
}

void KvWrite::record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const {
  if (T == 0) return;
  rec.dispatch(*kernel_, group, ceil_div(config_.kv_heads * config_.head_dim, config_.workgroup),
               checked_groups(kernels_.device(), T, "KvWrite"));
}

}  // namespace ember::kernels
