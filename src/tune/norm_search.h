// The norm-fusion part of `ember tune` (candidate extra `normFuse`): for every matrix shape whose
// decode input is an RMSNorm of the residual (conv_in_proj, attn_qkv, head, and mlp_gate_up where
// the tuner searched it), times the matvec with the norm in its prologue against the separate
// rmsnorm dispatch + plain matvec, at the tuned geometry; a fused output that differs from the
// separate one (rel_l2 > 1e-5) is rejected. normFuse is on when the fused total over one decode
// step (each shape times its count) is not slower. A shape is started only when its expected
// cost (`first_estimate` for the first, then the last shape's) ends before `deadline`; when not
// every shape is measured no decision is made.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/llm_runtime.h"
#include "tune/kernel_timer.h"
#include "tune/matvec_search.h"

namespace ember::tune {

struct NormFusionShape {
  std::string key;
  int count = 0;
  double fused_us = 0, separate_us = 0;  // per matvec (separate: norm + matvec)
  double rel_l2 = 0;
  bool rejected = false;
};

struct NormFusionResult {
  std::vector<NormFusionShape> shapes;
  double fused_total_us = 0, separate_total_us = 0;  // per decode step
  bool norm_fuse = false;
  bool budget_hit = false;  // not every shape measured: no decision (the candidate keeps its normFuse)
  nlohmann::json to_json() const;
};

// `shapes` with their tuned configuration and their pack weights (`weights[i]` for shapes[i]).
NormFusionResult search_norm_fusion(gpu::KernelCache& kernels, KernelTimer& timer, const std::vector<MatrixShape>& shapes,
                                    const std::vector<MatvecConfigChoice>& configs, const std::vector<kernels::Q4Matrix>& weights,
                                    float eps, Clock::time_point deadline, Clock::duration first_estimate);

}  // namespace ember::tune
