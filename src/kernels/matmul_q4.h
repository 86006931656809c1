// Y = W X (or Y += W X) for T tokens and a symmetric 4-bit matrix: the prefill matmul
// (matmul_q4.wgsl), register-tiled through workgroup memory, f32 arithmetic.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/q4_matrix.h"

namespace ember::kernels {

// Workgroup geometry: a tile of micro wg_tokens tokens x micro wg_rows rows (micro x micro
// outputs per thread: 8, or 4 for more workgroups on small outputs); K advances k_step columns
// per workgroup-memory round (8, 16 or 32). vec4: the workgroup tiles are read as vec4 (a
// thread's outputs in runs of 4 instead of strided by the thread grid). k_splits > 1: split-K,
// K cut into that many chunks of whole 32-blocks, each chunk's partial product written to a
// scratch and a second pass summing them into Y (more workgroups where the outputs are few).
struct MatmulGeometry {
  uint32_t wg_tokens = 16, wg_rows = 16, k_step = 16;
  uint32_t micro = 8;
  bool vec4 = false;
  uint32_t k_splits = 1;
  uint32_t tile_tokens() const { return micro * wg_tokens; }
  uint32_t tile_rows() const { return micro * wg_rows; }
  bool operator==(const MatmulGeometry&) const = default;
};
// "16x16k16" (tokens x rows, K step; "m4" for micro 4, "v4" for vec4, "s2" for 2 K splits)
std::string matmul_geometry_name(const MatmulGeometry& g);
// Whether the kernel accepts `g` on a device with `limits` (K step, threads, workgroup memory).
bool matmul_geometry_fits(const MatmulGeometry& g, const WGPULimits& limits);

struct MatmulConfig {
  uint32_t rows = 0, cols = 0;  // outputs, inputs
  OutputMode mode = OutputMode::overwrite;
  // false: W stored [rows][cols], 32-blocks along cols (cols a multiple of 32).
  // true: W stored transposed, [cols][rows] with 32-blocks along rows (rows a multiple of 32):
  // the MLP's down.kquant, which is the down weight of a run with the fused decode MLP.
  bool kmajor = false;
  MatmulGeometry geometry{};
  // W [rows = 2 F][cols] holds gate rows then up rows; Y [tokens][F] = silu(gate) * up (the
  // activation as the epilogue; overwrite mode, row-major W, no split-K, not vec4 with micro 4).
  bool gated = false;
};
// Whether `g` can run the gated epilogue.
bool matmul_gated_fits(const MatmulGeometry& g);

// Floats of split scratch a split-K product of `tokens` tokens needs (0 without split-K).
uint64_t matmul_split_floats(const MatmulConfig& config, uint32_t tokens);

// A bound product: the tiles, and with split-K the pass that sums the partials into Y.
struct MatmulBound {
  Bound product, sum;
};

class MatmulQ4 {
 public:
  MatmulQ4(gpu::KernelCache& kernels, const MatmulConfig& config);

  // Binds W, X [tokens][cols] f32 and Y [tokens][rows] f32 for `tokens` tokens (>= 1). The
  // bound group carries its own token count; bind once per distinct count (e.g. prefill chunk).
  // W is the stored matrix: [rows][cols], or [cols][rows] when kmajor. With split-K, `partials`
  // is f32 scratch of at least matmul_split_floats(config, tokens) floats.
  MatmulBound bind(const Q4Matrix& w, gpu::Binding x, gpu::Binding y, uint32_t tokens, gpu::Binding partials = {}) const;
  // One dispatch, or two with split-K (the second in region `kernel().label() + ".sum"`).
  void record(gpu::Recorder& rec, const MatmulBound& bound) const;

  const gpu::Kernel& kernel() const { return *kernel_; }
  const MatmulConfig& config() const { return config_; }

 private:
  gpu::KernelCache& kernels_;
  MatmulConfig config_;
  const gpu::Kernel* kernel_ = nullptr;
  const gpu::Kernel* sum_kernel_ = nullptr;  // split-K only
  bool sum_vec4() const { return config_.rows % 4 == 0; }  // the split sum reads vec4s
};

}  // namespace ember::kernels
