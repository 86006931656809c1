// A layer's out projection + MLP as decode runs them by default, on random inputs: out projection
// into x, gated gate_up with the ffn norm in its prologue, down into x (three dependent matvecs at
// the tuned geometries). The baseline that the searches for shorter ways (the one-dispatch
// residual MLP, the down projection in the gate_up) time and check against.
#pragma once

#include <vector>

#include "kernels/matvec_q4.h"
#include "tune/matvec_search.h"

namespace ember::tune {

struct LayerTailMatrices {
  kernels::Q4Matrix proj, gate_up, down;  // one layer's out projection, gate_up, down
  MatvecConfigChoice proj_config, gate_up_config, down_config;  // their tuned decode matvecs
};

class SeparateLayerTail {
 public:
  SeparateLayerTail(gpu::KernelCache& kernels, const formats::LlmShape& shape, const LayerTailMatrices& m);

  void restart(gpu::Recorder& rec) const;  // x back to its start value
  void record(gpu::Recorder& rec) const;   // the three dispatches
  // x after restart + record: what every shorter way must give.
  const std::vector<float>& reference() const { return reference_; }

  const kernels::MatvecConfig& proj_config() const { return proj_.config(); }
  const kernels::MatvecConfig& gate_up_config() const { return gate_up_.config(); }
  // The buffers the three read and write: y (the mixer's output, the out projection's input),
  // x (the residual), norm_w (the ffn norm weight), act (silu * up).
  gpu::Buffer y, x, norm_w, act;

 private:
  gpu::Buffer x0_;
  uint64_t x_bytes_ = 0;
  kernels::MatvecQ4 proj_, gate_up_, down_;
  kernels::Bound proj_b_, gate_up_b_, down_b_;
  std::vector<float> reference_;
};

}  // namespace ember::tune
