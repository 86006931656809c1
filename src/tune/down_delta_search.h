// The mlpDownDelta part of `ember tune`: a layer's out projection and MLP as decode runs them by
// default (out projection into x, gated gate_up with the ffn norm in its prologue, down into x:
// three dependent dispatches) against the out projection folding the residual delta back and the
// gate_up adding its down share into the delta (two; kernels::MatvecConfig::down_rows), at each
// count of gate_up channels a workgroup that the tuned gate_up geometry allows. Each count is
// checked against the separate path's output (x + delta against x).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "tune/residual_mlp_search.h"

namespace ember::tune {

struct DownDeltaTry {
  uint32_t channels = 0;  // gate_up channels per workgroup
  double us = 0;          // median GPU time, first start to last end; 0 when not usable
  std::string result;     // "" usable, else why not
};

struct DownDeltaSearchResult {
  double separate_us = 0;  // the three matvecs
  uint32_t channels = 0;   // the winner (0: the separate down dispatch stays)
  double best_us = 0;      // the winner's time (separate_us when channels is 0)
  std::vector<DownDeltaTry> tried;
  bool budget_hit = false;
  nlohmann::json to_json() const;
};

// The channel counts to try for a gate_up geometry: multiples of 8 from 8 to 128 that give each of
// its lane groups 1..8 rows.
std::vector<uint32_t> down_delta_channels(const kernels::MatvecGeometry& gate_up);

DownDeltaSearchResult search_down_delta(gpu::KernelCache& kernels, KernelTimer& timer, const formats::LlmShape& shape,
                                        const ResidualMlpMatrices& m, Clock::time_point deadline);

}  // namespace ember::tune
