#include "kernels/lfm2/conv.h"

#include "common/error.h"
#include "kernels/step.h"

namespace ember::kernels {
namespace {

struct Params {
  uint32_t hidden, in_stride, state_stride, pad0;
};
static_assert(sizeof(Params) == 16);

}  // namespace

ShortConv::ShortConv(gpu::KernelCache& kernels, const ConvConfig& config) : kernels_(kernels), config_(config) {
  if (config_.hidden == 0) throw Error("hidden must be positive", "ShortConv");
  if (config_.in_stride == 0) config_.in_stride = 3 * config_.hidden;
  if (config_.in_stride < 3 * config_.hidden) throw Error("in_stride must be >= 3 * hidden", "ShortConv");
  if (config_.state_stride == 0) config_.state_stride = 2 * config_.hidden;
  if (config_.state_stride < 2 * config_.hidden) throw Error("state_stride must be >= 2 * hidden", "ShortConv");
  const double wg = config_.workgroup;
  conv_kernel_ = &kernels.get({.file = "conv.wgsl", .entry = config_.fused ? "main" : "parallel",
                               .constants = {{"WG", wg}}});
  if (!config_.fused) state_kernel_ = &kernels.get({.file = "conv_state.wgsl", .constants = {{"WG", wg}}});
  params_ = kernels.device().create_uniform(Params{config_.hidden, config_.in_stride, config_.state_stride, 0}, "conv params");
}

ShortConv::Groups ShortConv::bind(gpu::Binding in, gpu::Binding taps, gpu::Binding state, gpu::Binding out,
                                  gpu::Binding step) const {
  Groups g;
  g.conv = kernels_.bind(*conv_kernel_, {in, taps, state, out, {&params_}, step});
  if (state_kernel_) g.state = kernels_.bind(*state_kernel_, {in, state, {&params_}, step});
  return g;
}

void ShortConv::record(gpu::Recorder& rec, const Groups& groups, uint32_t T, uint32_t sequences) const {
  if (T == 0 || sequences == 0) return;
  const uint32_t groups_x = ceil_div(config_.hidden, config_.workgroup);
  if (config_.fused) {
    rec.dispatch(*conv_kernel_, groups.conv, groups_x, 1, checked_groups(kernels_.device(), sequences, "ShortConv"));
    return;
  }
  if (sequences != 1) throw Error("the unfused (prefill) conv steps one sequence", "ShortConv::record");
  rec.dispatch(*conv_kernel_, groups.conv, groups_x, checked_groups(kernels_.device(), T, "ShortConv"));
  rec.dispatch(*state_kernel_, groups.state, groups_x);
}

}  // namespace ember::kernels
