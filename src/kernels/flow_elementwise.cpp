#include "kernels/flow_elementwise.h"

namespace ember::kernels {

Dispatch activation(gpu::KernelCache& kernels, Activation f, const gpu::Buffer& y, uint32_t n, const std::string& region) {
  gpu::KernelKey key{.file = "activation.wgsl", .constants = {{"WG", 256}}};
  key.defines.insert(f == Activation::Silu ? "SILU" : f == Activation::QuickGelu ? "QUICK_GELU" : "GELU");
  const bool vec4 = n % 4 == 0;
  if (vec4) key.defines.insert("VEC4");
  Dispatch d;
  d.kernel = &kernels.get(key);
  d.region = region;
  const uint32_t params[4] = {n, 0, 0, 0};
  d.params = kernels.device().create_uniform(params, "activation params " + region);
  d.group = kernels.bind(*d.kernel, {{&y}, {&d.params}});
  grid_1d(d, (uint64_t(vec4 ? n / 4 : n) + 255) / 256);
  return d;
}

Dispatch euler_step(gpu::KernelCache& kernels, const gpu::Buffer& x, const gpu::Buffer& vel, const gpu::Buffer& params,
                    uint32_t n, const std::string& region) {
  Dispatch d;
  d.kernel = &kernels.get({.file = "euler_step.wgsl", .constants = {{"WG", 256}}});
  d.region = region;
  d.group = kernels.bind(*d.kernel, {{&x}, {&vel}, {&params}});
  d.x = (n + 255) / 256;
  return d;
}

}  // namespace ember::kernels
