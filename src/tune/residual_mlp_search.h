// The one-dispatch residual MLP part of `ember tune` (candidate residualMlpWorkgroups): a layer's out projection, ffn norm and MLP as decode runs them by
// default (three matvecs at the tuned geometries) against kernels::ResidualMlpQ4 at grids of
// several sizes. Each grid is checked against the separate path's output, and for waits that gave
// up: a grid the GPU cannot hold at once, after which no larger grid is tried.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "formats/llm_runtime.h"
#include "tune/kernel_timer.h"
#include "tune/matvec_search.h"

namespace ember::tune {

struct ResidualMlpTry {
  uint32_t workgroups = 0;
  double us = 0;       // median GPU time; 0 when not usable
  std::string result;  // "" usable, else why not ("output differs", "a wait gave up", the config error)
};

struct ResidualMlpSearchResult {
  double separate_us = 0;        // the three matvecs, first start to last end
  uint32_t workgroups = 0;       // the winner (0: the separate dispatches stay)
  double best_us = 0;            // the winner's time (separate_us when workgroups is 0)
  std::vector<ResidualMlpTry> tried;
  bool budget_hit = false;
  nlohmann::json to_json() const;
};

struct ResidualMlpMatrices {
  kernels::Q4Matrix proj, gate_up, down;  // one layer's out projection, gate_up, down
  MatvecConfigChoice proj_config, gate_up_config, down_config;  // their tuned decode matvecs
};

ResidualMlpSearchResult search_residual_mlp(gpu::KernelCache& kernels, KernelTimer& timer, const formats::LlmShape& shape,
                                            const ResidualMlpMatrices& m, Clock::time_point deadline);

}  // namespace ember::tune
