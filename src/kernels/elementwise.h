// Element-wise kernels of the LLM: silu(gate) * up (silu_mul.wgsl) and the residual add
// x += y (residual_add.wgsl), both over T rows.
#pragma once

#include <cstdint>

#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace ember::kernels {

struct SiluMulConfig {
  uint32_t ffn = 0;
  uint32_t in_stride = 0;  // elements between tokens of gate_up; 0 = 2 * ffn
  uint32_t workgroup = 256;
};

class SiluMul {
 public:
  SiluMul(gpu::KernelCache& kernels, const SiluMulConfig& config);
  // gate_up [T][2 * ffn] (gate | up), out dense [T][ffn].
  gpu::BindGroup bind(gpu::Binding gate_up, gpu::Binding out) const;
  void record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const;

 private:
  gpu::KernelCache& kernels_;
  SiluMulConfig config_;
  const gpu::Kernel* kernel_;
  gpu::Buffer params_;
};

struct ResidualAddConfig {
  uint32_t cols = 0;
  uint32_t workgroup = 256;
};

class ResidualAdd {
 public:
  ResidualAdd(gpu::KernelCache& kernels, const ResidualAddConfig& config);
  // x [T][cols] += y [T][cols].
  gpu::BindGroup bind(gpu::Binding x, gpu::Binding y) const;
  void record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const;

 private:
  gpu::KernelCache& kernels_;
  ResidualAddConfig config_;
  const gpu::Kernel* kernel_;
  gpu::Buffer params_;
};

}  // namespace ember::kernels
