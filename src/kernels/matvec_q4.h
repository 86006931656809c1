// y = W x (or y += W x) for one vector and a 4-bit matrix: the decode matvec (matvec_q4.wgsl).
#pragma once

#include <cstdint>

#include "kernels/q4_matrix.h"

namespace ember::kernels {

// The candidate's geometry (runtime.json candidate.matvec[shape].geometry). subgroupSize is a
// logical lane-group width: the kernel is correct whatever the hardware subgroup size is.
struct MatvecGeometry {
  uint32_t workgroup_size = 256;
  uint32_t subgroup_size = 32;
  uint32_t rows_per_subgroup = 1;  // at most 8
  uint32_t subgroups_per_row = 1;
  // Rows one workgroup produces.
  uint32_t rows_per_workgroup() const { return workgroup_size / (subgroup_size * subgroups_per_row) * rows_per_subgroup; }
};

struct MatvecConfig {
  uint32_t rows = 0, cols = 0;  // cols a multiple of 32
  bool asymmetric = false;      // zero points (the head)
  Q4Variant variant = Q4Variant::carried;
  MatvecGeometry geometry;
  OutputMode mode = OutputMode::overwrite;
  // Gated output (the MLP's gate_up with silu * up fused in): W is [2 * rows][cols], gate rows
  // then up rows, and y[r] = silu(W[r] x) * (W[rows + r] x). Overwrite mode only.
  bool gated = false;
  // Conv-step output (LFM2's conv in_proj with the decode conv fused in): W is [3 * rows][cols],
  // the B, C and x rows, and y[r] = C_r . x * (taps[r] . (state[r][0], state[r][1], bx)) with
  // bx = (B_r . x)(x_r . x); the state (f32 [rows][2]) shifts in bx. Overwrite mode only.
  bool conv = false;
  // Input prologue: the matvec reads rmsnorm(x) * norm_weight (f32 [cols], bound by bind) instead
  // of x; every workgroup computes the norm of x itself, so no norm dispatch is needed.
  bool norm_input = false;
  float eps = 1e-5f;  // norm_input's epsilon
  // Extra workgroups read another matrix (bound by bind: the next matvec's weights) into the L2
  // cache while this one runs; the output is unchanged.
  bool prefetch = false;
  Reduction reduction = Reduction::best;
  uint32_t max_workgroups_per_dim = 0;  // 0: the device's limit (tests lower it to reach 2D grids)
};

class MatvecQ4 {
 public:
  // Validates the config (throws ember::Error) and compiles the kernel once through the cache.
  MatvecQ4(gpu::KernelCache& kernels, const MatvecConfig& config);

  // Binds W ([2 * rows][cols] when gated), x [cols] f32 and y [rows] f32 (read as well as written
  // in accumulate mode); norm_weight [cols] f32 with norm_input (and only then); with conv the
  // taps (f32 [rows][3]) and the state (f32 [rows][2]). Create once per tensor and reuse for
  // every token.
  // With prefetch, `next` is the matrix to read ahead (its quant and scales).
  Bound bind(const Q4Matrix& w, gpu::Binding x, gpu::Binding y, gpu::Binding norm_weight = {}, gpu::Binding conv_taps = {},
             gpu::Binding conv_state = {}, const Q4Matrix* next = nullptr) const;
  void record(gpu::Recorder& rec, const Bound& bound) const;

  const gpu::Kernel& kernel() const { return *kernel_; }
  const MatvecConfig& config() const { return config_; }

 private:
  gpu::KernelCache& kernels_;
  MatvecConfig config_;
  const gpu::Kernel* kernel_ = nullptr;
  Grid grid_;
};

}  // namespace ember::kernels
