// The out projection and the gated MLP of a pre-norm residual block for one vector, in one
// dispatch (residual_mlp_q4.wgsl): x += Wo y, then x += Wd (silu(Wg n(x)) * Wu n(x)) with n the
// RMSNorm times its weight. A fixed grid of workgroups runs the three matvecs, waiting for each
// other through tagged scratch words instead of dispatch boundaries. Every workgroup of the grid
// must be resident at once: a graph checks that once on the device (a probe dispatch) before
// relying on it.
#pragma once

#include <cstdint>
#include <optional>

#include "kernels/q4_matrix.h"

namespace ember::kernels {

struct ResidualMlpConfig {
  uint32_t hidden = 0, ffn = 0;  // hidden a multiple of 32
  uint32_t proj_cols = 0;        // the out projection's input width (a multiple of 32)
  uint32_t workgroups = 0;       // the persistent grid (candidate extra key residualMlpWorkgroups)
  uint32_t workgroup_size = 256;
  uint32_t lanes = 32;           // lanes per row: a power of two dividing workgroup_size
  // Workgroups that may still be busy with a stage when the others start polling its words
  // (residual_mlp_q4.wgsl's wait_for_stage): none given, a quarter of the grid.
  std::optional<uint32_t> wait_slack;
  float eps = 1e-5f;
  // Loads of one scratch word before a wait gives up and sets the status word (a grid that is not
  // resident). 0: the device's default, 2^20 on a GPU (~1 s on a big one, well past any real wait)
  // and 2^24 on a CPU adapter (~0.25 s on lavapipe), whose workgroups are threads the OS may
  // preempt for milliseconds: at 2^20 (a few ms there) a loaded machine made waits give up.
  uint32_t spin_limit = 0;
  Reduction reduction = Reduction::best;
  // Read the next dispatch's weights (bind's `next`) into the L2 cache, starting in this stage
  // (0-2, after the stage's own weight loads; stage 1, whose wait is the longest, measured fastest).
  bool prefetch = false;
  uint32_t prefetch_stage = 1;
};

class ResidualMlpQ4 {
 public:
  // Validates the config against the device (throws ember::Error) and compiles the kernel.
  ResidualMlpQ4(gpu::KernelCache& kernels, const ResidualMlpConfig& config);

  // Scratch one bind needs: the tagged words of m and h, the status word (status_offset(), nonzero
  // once a wait gave up), two stage counters and the stall word (stall_offset()). Zeroed when
  // created, never shared between binds of one step; the step buffer's decode_step must count its
  // uses from 1 with one grid size.
  uint64_t scratch_bytes() const;
  uint64_t status_offset() const;
  uint64_t stall_offset() const;
  // Tests of the give-up path only: makes every later wait of the binds on `scratch` give up at
  // once (sets its stall word), or stops that.
  void stall_for_tests(const gpu::Binding& scratch, bool stall) const;

  // proj [hidden][proj_cols], gate_up [2 * ffn][hidden] (gate rows, then up rows), down
  // [hidden][ffn], all symmetric and in one buffer (each part at a multiple of 16 bytes, all within
  // one storage binding's reach, as the pack loader places them); y [proj_cols] f32, x [hidden]
  // f32 (the residual, updated), norm_weight [hidden] f32; scratch (scratch_bytes(), zeroed); step (a step buffer: its
  // decode_step counts this scratch's uses from 1); next: with prefetch, the weights to read ahead
  // (its quant and scales, whatever their rows and cols; none for the last layer); status_at: the
  // byte offset in `scratch` of the status word a give-up sets, by default status_offset(); past
  // scratch_bytes() (the binding then reaches it), a word the binds of a graph share, so that one
  // copy reads them all.
  Bound bind(const Q4Matrix& proj, const Q4Matrix& gate_up, const Q4Matrix& down, gpu::Binding y, gpu::Binding x, gpu::Binding norm_weight,
             gpu::Binding scratch, gpu::Binding step, const Q4Matrix* next = nullptr, std::optional<uint64_t> status_at = {}) const;
  void record(gpu::Recorder& rec, const Bound& bound) const;

  const ResidualMlpConfig& config() const { return config_; }
  const gpu::Kernel& kernel() const { return *kernel_; }

 private:
  gpu::KernelCache& kernels_;
  ResidualMlpConfig config_;
  const gpu::Kernel* kernel_ = nullptr;
};

}  // namespace ember::kernels
