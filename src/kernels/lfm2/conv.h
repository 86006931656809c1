// LFM2 short convolution (conv.wgsl, conv_state.wgsl): in_proj output [T][3 * hidden] -> y
// [T][hidden] = C * causal_conv3(B * xs), with a GPU conv state [hidden][2] carried across steps.
// T is read from StepParams.rows (must equal record()'s T). The caller zeroes the state at the
// start of a sequence (Recorder::clear).
#pragma once

#include <cstdint>

#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace ember::kernels {

struct ConvConfig {
  uint32_t hidden = 0;
  uint32_t in_stride = 0;  // elements between tokens in the input; 0 = 3 * hidden
  uint32_t state_stride = 0;  // elements between two sequences' states (fused, batched); 0 = 2 * hidden
  bool fused = true;       // one sequential-over-T dispatch (decode); false: parallel over T + state update
  uint32_t workgroup = 64;
};

class ShortConv {
 public:
  ShortConv(gpu::KernelCache& kernels, const ConvConfig& config);
  struct Groups {
    gpu::BindGroup conv, state;  // `state` only when not fused
  };
  // taps f32 [hidden][3]; state f32 [hidden][2]; out dense [T][hidden]; step: StepParams {rows = T}.
  // Fused, several sequences: steps holds one StepParams per sequence ({rows = 1, seq}), in
  // and out one row per sequence, state one state per sequence at state_stride.
  Groups bind(gpu::Binding in, gpu::Binding taps, gpu::Binding state, gpu::Binding out, gpu::Binding step) const;
  void record(gpu::Recorder& rec, const Groups& groups, uint32_t T, uint32_t sequences = 1) const;

 private:
  gpu::KernelCache& kernels_;
  ConvConfig config_;
  const gpu::Kernel* conv_kernel_;
  const gpu::Kernel* state_kernel_ = nullptr;
  gpu::Buffer params_;
};

}  // namespace ember::kernels
