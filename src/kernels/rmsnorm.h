// RMSNorm (plain over [T][cols], or per head for q/k norms), see rmsnorm.wgsl.
#pragma once

#include <cstdint>

#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace ember::kernels {

struct RmsNormConfig {
  uint32_t cols = 0;           // values normalised together (hidden, or headDim for q/k norms)
  float eps = 1e-5f;
  uint32_t heads = 1;          // rows per token: 1 = plain norm; nHeads = per-head norm
  uint32_t token_stride = 0;   // elements between tokens in x; 0 = heads * cols
  uint32_t offset = 0;         // element offset of token 0, head 0 in x (e.g. k inside a qkv row)
  bool in_place = false;       // overwrite x (bind no out)
  bool subgroups = false;      // needs the device's subgroups feature
  uint32_t workgroup = 256;    // power of two
};

class RmsNorm {
 public:
  RmsNorm(gpu::KernelCache& kernels, const RmsNormConfig& config);
  // `out` (dense [T * heads][cols]) is ignored when in_place.
  gpu::BindGroup bind(gpu::Binding x, gpu::Binding weight, gpu::Binding out = {nullptr}) const;
  void record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const;
  const RmsNormConfig& config() const { return config_; }

 private:
  gpu::KernelCache& kernels_;
  RmsNormConfig config_;
  const gpu::Kernel* kernel_;
  gpu::Buffer params_;
};

}  // namespace ember::kernels
