#include "kernels/rmsnorm.h"

#include "common/error.h"
#include "kernels/step.h"

namespace ember::kernels {
namespace {

struct Params {
  uint32_t cols;
  float eps;
  uint32_t heads, token_stride, offset, pad0, pad1, pad2;
};
static_assert(sizeof(Params) == 32);

}  // namespace

RmsNorm::RmsNorm(gpu::KernelCache& kernels, const RmsNormConfig& config) : kernels_(kernels), config_(config) {
  if (config_.cols == 0 || config_.heads == 0) throw Error("cols and heads must be positive", "RmsNorm");
  if ((config_.workgroup & (config_.workgroup - 1)) != 0 || config_.workgroup > 1024)
    throw Error("workgroup must be a power of two <= 1024", "RmsNorm", "use e.g. 64 or 256");
  if (config_.token_stride == 0) config_.token_stride = config_.heads * config_.cols;
  if (config_.subgroups && !kernels.device().has_subgroups())
    throw Error("subgroup variant requested but the device has no subgroups", "RmsNorm", "use the shared variant");
  gpu::KernelKey key{.file = "rmsnorm.wgsl", .constants = {{"WG", config_.workgroup}}};
  if (config_.subgroups) key.defines.insert("SUBGROUPS");
  if (config_.in_place) key.defines.insert("IN_PLACE");
  kernel_ = &kernels.get(key);
  params_ = kernels.device().create_uniform(
      Params{config_.cols, config_.eps, config_.heads, config_.token_stride, config_.offset, 0, 0, 0}, "rmsnorm params");
}

gpu::BindGroup RmsNorm::bind(gpu::Binding x, gpu::Binding weight, gpu::Binding out) const {
  if (config_.in_place) return kernels_.bind(*kernel_, {x, weight, {&params_}});
  if (!out.buffer) throw Error("out-of-place RmsNorm needs an out binding", "RmsNorm::bind");
  return kernels_.bind(*kernel_, {x, weight, {&params_}, out});
}

void RmsNorm::record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const {
  if (T == 0) return;
  rec.dispatch(*kernel_, group, checked_groups(kernels_.device(), uint64_t(T) * config_.heads, "RmsNorm"));
}

}  // namespace ember::kernels
