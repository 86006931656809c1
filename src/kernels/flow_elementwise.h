// Elementwise kernels: activations in place (src/kernels/activation.wgsl) and the guided Euler
// step of the flow sampler (src/kernels/euler_step.wgsl).
#pragma once

#include "kernels/dispatch.h"

namespace ember::kernels {

enum class Activation { Silu, GeluTanh, QuickGelu };

Dispatch activation(gpu::KernelCache& kernels, Activation f, const gpu::Buffer& y, uint32_t n,
                    const std::string& region = "");

// v = guided ? (1+s) vel[i] - s vel[n+i] : vel[i]; x -= dt * v; vel[i] = v (the guided velocity
// replaces the conditional one). The parameters live in `params`, an EulerParams uniform the
// caller rewrites before each step.
struct EulerParams {
  uint32_t n, guided;
  float dt, strength;
};
static_assert(sizeof(EulerParams) == 16);

Dispatch euler_step(gpu::KernelCache& kernels, const gpu::Buffer& x, const gpu::Buffer& vel, const gpu::Buffer& params,
                    uint32_t n, const std::string& region = "");

}  // namespace ember::kernels
