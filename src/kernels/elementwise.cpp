#include "kernels/elementwise.h"

#include "common/error.h"
#include "kernels/step.h"

namespace ember::kernels {
namespace {

struct Params {
  uint32_t n, stride, pad0, pad1;
};
static_assert(sizeof(Params) == 16);

}  // namespace

SiluMul::SiluMul(gpu::KernelCache& kernels, const SiluMulConfig& config) : kernels_(kernels), config_(config) {
  if (config_.ffn == 0) throw Error("ffn must be positive", "SiluMul");
  if (config_.in_stride == 0) config_.in_stride = 2 * config_.ffn;
  kernel_ = &kernels.get({.file = "silu_mul.wgsl", .constants = {{"WG", config_.workgroup}}});
  params_ = kernels.device().create_uniform(Params{config_.ffn, config_.in_stride, 0, 0}, "silu_mul params");
}

gpu::BindGroup SiluMul::bind(gpu::Binding gate_up, gpu::Binding out) const {
  return kernels_.bind(*kernel_, {gate_up, out, {&params_}});
}

void SiluMul::record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const {
  if (T == 0) return;
  rec.dispatch(*kernel_, group, ceil_div(config_.ffn, config_.workgroup), checked_groups(kernels_.device(), T, "SiluMul"));
}

ResidualAdd::ResidualAdd(gpu::KernelCache& kernels, const ResidualAddConfig& config)
    : kernels_(kernels), config_(config) {
  if (config_.cols == 0) throw Error("cols must be positive", "ResidualAdd");
  kernel_ = &kernels.get({.file = "residual_add.wgsl", .constants = {{"WG", config_.workgroup}}});
  params_ = kernels.device().create_uniform(Params{config_.cols, 0, 0, 0}, "residual_add params");
}

gpu::BindGroup ResidualAdd::bind(gpu::Binding x, gpu::Binding y) const {
  return kernels_.bind(*kernel_, {x, y, {&params_}});
}

void ResidualAdd::record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const {
  if (T == 0) return;
  rec.dispatch(*kernel_, group, ceil_div(config_.cols, config_.workgroup),
               checked_groups(kernels_.device(), T, "ResidualAdd"));
}

}  // namespace ember::kernels
