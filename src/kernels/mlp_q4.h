// The fused gated MLP on 4-bit weights (the candidate's mlpPair): x += down(silu(gate h) * up h)
// in two dispatches, mlp_q4.wgsl (one workgroup per slice of ffn rows, partial hidden vectors)
// and fold_partials.wgsl (sums the partials into x). The down matrix is the k-major copy
// (`mlp.down.kquant/kscales`): a Q4Matrix with rows = ffn, cols = hidden.
#pragma once

#include <cstdint>

#include "kernels/q4_matrix.h"

namespace ember::kernels {

struct MlpConfig {
  uint32_t hidden = 0, ffn = 0;  // hidden a multiple of 32
  uint32_t slices = 40;          // mlpSlices: workgroups, each ceil(ffn / slices) ffn rows
  uint32_t workgroup_size = 256; // mlpWorkgroup
  uint32_t lanes = 32;           // lanes per gate/up dot product: a power of two dividing workgroup_size
  // Input prologue: h is the un-normed residual, used as rmsnorm(h) * norm_weight (the ffn norm
  // fused in; every workgroup computes the norm itself).
  bool norm_input = false;
  float eps = 1e-5f;
  // The down products in f16 (mlpHalfProduct "down"; needs shader-f16), summed in f32.
  bool half_product = false;
  Reduction reduction = Reduction::best;
};

struct MlpBound {
  Bound slices;
  Bound fold;
};

class MlpQ4 {
 public:
  // Compiles both kernels and allocates the partials buffer (reused by every bind: the two
  // dispatches of one bind must not interleave with another bind's).
  MlpQ4(gpu::KernelCache& kernels, const MlpConfig& config);

  // gate_up [2 * ffn][hidden], kquant [ffn][hidden] (symmetric, k-major), h [hidden] f32 (the
  // normed input; with norm_input the un-normed one, normed with norm_weight [hidden] f32), x
  // [hidden] f32 (the residual, added into; may be the buffer h is with norm_input).
  MlpBound bind(const Q4Matrix& gate_up, const Q4Matrix& kquant, gpu::Binding h, gpu::Binding x, gpu::Binding norm_weight = {}) const;
  void record(gpu::Recorder& rec, const MlpBound& bound) const;

  uint32_t partial_count() const { return partial_count_; }

 private:
  gpu::KernelCache& kernels_;
  MlpConfig config_;
  const gpu::Kernel* slice_kernel_ = nullptr;
  const gpu::Kernel* fold_kernel_ = nullptr;
  uint32_t rows_per_slice_ = 0, ksplit_ = 1, partial_count_ = 0;
  gpu::Buffer partials_;
};

}  // namespace ember::kernels
