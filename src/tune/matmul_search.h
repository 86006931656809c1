// The prefill part of `ember tune` (candidate prefillMatmul): for each matrix shape of the model,
// the matmul_q4 geometries (threads along tokens x rows, K step) at the prefill chunk length,
// each checked against the default geometry on the same random input (rejected above rel_l2
// 1e-5) and timed on the pack's real weights (k-major down when mlpPair makes it the model).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/matmul_q4.h"
#include "tune/matvec_search.h"

namespace ember::tune {

struct MatmulShapeResult {
  MatrixShape shape;
  bool kmajor = false;
  uint32_t tokens = 0;
  kernels::MatmulGeometry reference, best;  // reference: the default geometry
  double reference_us = 0, best_us = 0;
  int tried = 0, rejected = 0, invalid = 0;
  bool budget_hit = false;
  std::vector<std::pair<double, kernels::MatmulGeometry>> timed;  // every measured geometry, fastest first
  double best_tflops() const;  // 2 rows cols tokens / best_us
  nlohmann::json to_json() const;
};

// Geometries the kernel accepts on this device: wg tokens x rows in {4, 8, 16, 32} (at most the
// invocation limit), K step {8, 16, 32} within workgroup memory, micro 8 and 4, vec4 tiles or
// not; `first` in front.
std::vector<kernels::MatmulGeometry> matmul_space(const gpu::Device& device, const std::vector<kernels::MatmulGeometry>& first);

MatmulShapeResult search_matmul(gpu::KernelCache& kernels, KernelTimer& timer, const MatrixShape& shape, const kernels::Q4Matrix& w,
                                bool kmajor, uint32_t tokens, const std::vector<kernels::MatmulGeometry>& space,
                                Clock::time_point deadline);

// The candidate's field: {"mlp_gate_up": {"wgTokens": 16, "wgRows": 16, "kStep": 16, "micro": 8, "vec4": true}, ...}.
nlohmann::json matmul_geometry_json(const kernels::MatmulGeometry& g);

}  // namespace ember::tune
