#include "kernels/rope.h"

#include "common/error.h"
#include "kernels/step.h"

namespace ember::kernels {
namespace {

struct Params {
  uint32_t heads, kv_heads, head_dim, q_stride, q_offset, k_stride, k_offset, pad0;
};
static_assert(sizeof(Params) == 32);

}  // namespace

Rope::Rope(gpu::KernelCache& kernels, const RopeConfig& config) : kernels_(kernels), config_(config) {
  if (config_.heads == 0 || config_.head_dim == 0 || config_.head_dim % 2 != 0)
    throw Error("heads must be positive and head_dim positive and even", "Rope");
  if (config_.q_stride == 0) config_.q_stride = config_.heads * config_.head_dim;
  if (config_.k_stride == 0) config_.k_stride = config_.kv_heads * config_.head_dim;
  gpu::KernelKey key{.file = "rope.wgsl", .constants = {{"WG", config_.workgroup}}};
  if (config_.shared_qk) key.defines.insert("SHARED_QK");
  kernel_ = &kernels.get(key);
  params_ = kernels.device().create_uniform(Params{config_.heads, config_.kv_heads, config_.head_dim,
                                                   config_.q_stride, config_.q_offset, config_.k_stride,
                                                   config_.k_offset, 0},
                                            "rope params");
}

gpu::BindGroup Rope::bind(gpu::Binding q, gpu::Binding k, gpu::Binding cos, gpu::Binding sin,
                          gpu::Binding step) const {
  if (config_.shared_qk) return kernels_.bind(*kernel_, {q, cos, sin, {&params_}, step});
  if (!k.buffer) throw Error("Rope without shared_qk needs a k binding", "Rope::bind");
  return kernels_.bind(*kernel_, {q, k, cos, sin, {&params_}, step});
}

void Rope::record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const {
  if (T == 0) return;
  const uint32_t pairs = (config_.heads + config_.kv_heads) * config_.head_dim / 2;
  rec.dispatch(*kernel_, group, ceil_div(pairs, config_.workgroup), checked_groups(kernels_.device(), T, "Rope"));
}

}  // namespace ember::kernels
