// Y = W X (or Y += W X) for T tokens and a symmetric 4-bit matrix: the prefill matmul
// (matmul_q4.wgsl), tiled in workgroup memory.
#pragma once

#include <cstdint>

#include "kernels/q4_matrix.h"

namespace ember::kernels {

struct MatmulConfig {
  uint32_t rows = 0, cols = 0;  // cols a multiple of 32
  OutputMode mode = OutputMode::overwrite;
  uint32_t tile_rows = 64;      // a multiple of 4
  uint32_t tile_tokens = 64;    // a multiple of 4; (tile_rows / 4) * (tile_tokens / 4) lanes
};

class MatmulQ4 {
 public:
  MatmulQ4(gpu::KernelCache& kernels, const MatmulConfig& config);

  // Binds W, X [tokens][cols] f32 and Y [tokens][rows] f32 for `tokens` tokens (>= 1). The
  // bound group carries its own token count; bind once per distinct count (e.g. prefill chunk).
  Bound bind(const Q4Matrix& w, gpu::Binding x, gpu::Binding y, uint32_t tokens) const;
  void record(gpu::Recorder& rec, const Bound& bound) const;

  const gpu::Kernel& kernel() const { return *kernel_; }
  const MatmulConfig& config() const { return config_; }

 private:
  gpu::KernelCache& kernels_;
  MatmulConfig config_;
  const gpu::Kernel* kernel_ = nullptr;
};

}  // namespace ember::kernels
