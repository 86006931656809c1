// Y[v] = W X[v] (or Y[v] += W X[v]) for several vectors and a 4-bit matrix, reading W once: the
// batched decode matvec (matvec_q4_batch.wgsl), one vector per sequence of the batch.
#pragma once

#include <cstdint>

#include "kernels/q4_matrix.h"

namespace ember::kernels {

// The most vectors one dispatch takes (MAX_NV in matvec_q4_batch.wgsl).
inline constexpr uint32_t kMaxVectors = 16;

struct MatvecBatchConfig {
  uint32_t rows = 0, cols = 0;  // cols a multiple of 32
  bool asymmetric = false;      // zero points (the head)
  OutputMode mode = OutputMode::overwrite;
  uint32_t max_vectors = 16;    // most vectors one bind may take, 1..kMaxVectors (sizes workgroup memory)
  uint32_t workgroup_size = 256;
  uint32_t lanes = 32;          // lanes per row: a power of two >= 8 dividing workgroup_size (8 share a block)
  Reduction reduction = Reduction::best;
  uint32_t max_workgroups_per_dim = 0;  // 0: the device's limit (tests lower it to reach 2D grids)
};

class MatvecBatchQ4 {
 public:
  // Validates the config (throws ember::Error) and compiles the kernel once through the cache.
  MatvecBatchQ4(gpu::KernelCache& kernels, const MatvecBatchConfig& config);

  // Binds W, X [vectors][cols] f32 and Y [vectors][rows] f32 (read as well in accumulate mode)
  // for `vectors` vectors (1..max_vectors). The bound group carries its vector count.
  Bound bind(const Q4Matrix& w, gpu::Binding x, gpu::Binding y, uint32_t vectors) const;
  void record(gpu::Recorder& rec, const Bound& bound) const;

  const gpu::Kernel& kernel() const { return *kernel_; }
  const MatvecBatchConfig& config() const { return config_; }

 private:
  gpu::KernelCache& kernels_;
  MatvecBatchConfig config_;
  const gpu::Kernel* kernel_ = nullptr;
  Grid grid_;
};

}  // namespace ember::kernels
