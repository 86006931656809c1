// The fused-MLP part of `ember tune` (candidate mlpSlices/mlpWorkgroup/mlpHalfProduct): slices x
// workgroup sizes of mlp_q4 on a layer's real gate_up + down.kquant, each checked against the
// default configuration (slices 40, workgroup 256, f32); then, where the adapter has shader-f16,
// the best geometry with f16 down products, checked against the same f32 output within f16's
// tolerance. Timed as decode runs it: the ffn norm in its prologue.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "formats/llm_runtime.h"
#include "tune/kernel_timer.h"
#include "tune/matvec_search.h"

namespace ember::tune {

struct MlpChoice {
  uint32_t slices = 40, workgroup = 256;
  bool half_product = false;  // mlpHalfProduct "down"
  bool operator==(const MlpChoice&) const = default;
};

struct MlpSearchResult {
  MlpChoice reference, best;
  double reference_us = 0, best_us = 0;
  double input_us = 0;  // the input candidate's slices/workgroup (first of `first`), when measured
  // The best f32 geometry with f16 down products (0: not measured; -1: rejected, its output too far
  // from the f32 one).
  double half_product_us = 0;
  int tried = 0, rejected = 0, invalid = 0;
  bool budget_hit = false;
  nlohmann::json to_json() const;
};

// `layer_prefix`: "L0." (the layer whose weights are measured); `first`: choices tried first.
MlpSearchResult search_mlp(gpu::KernelCache& kernels, KernelTimer& timer, const formats::LlmShape& shape, const kernels::Q4Matrix& gate_up,
                           const kernels::Q4Matrix& kquant, const std::vector<MlpChoice>& first, Clock::time_point deadline);

}  // namespace ember::tune
