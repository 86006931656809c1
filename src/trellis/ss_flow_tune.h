// `ember tune --stage`: searches the ss-flow stage's tuning choices (SsFlowOptions) on this GPU.
// Each choice is built on the model's weights, its batch-1 and batch-2 forwards of a fixed input
// compared with the reference path's (the f32 path under the default options) before it is timed;
// a choice outside its tolerance is rejected. Coordinate descent from the defaults, one field at
// a time, until the budget is spent. A best choice on the int8 path must also keep the default
// sampler's final latent within latent_budget of the reference path's, else the best f32 one wins.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trellis/sampler_options.h"
#include "trellis/ss_flow.h"

namespace ember::trellis {

struct SsFlowTuneOptions {
  double budget_s = 120;  // the search stops starting new choices after this long
  int repeats = 3;        // timed runs per forward after one warm-up (median)
  int max_choices = 0;    // stop after this many choices tried (the defaults included); 0: the budget alone
  double f32_tolerance = 1e-4;    // rel L2 of an f32 choice's forward against the reference
  double int8_tolerance = 3e-2;   // the same for a choice with int8 matmuls
  double latent_budget = 1e-2;    // rel L2 of the final latent, int8 choice vs reference path
  SamplerOptions sampler{};       // the run whose steps weight the forwards and whose latent is checked
  int64_t ctx_tokens = 77;
  std::function<void(const std::string&)> progress;
};

struct SsFlowTuneResult {
  struct Row {
    std::string change;  // what differs from the best so far ("defaults", "int8=true", ...)
    std::string outcome;  // "best", "slower", "rejected: ...", "failed: ...", "same as checked"
    double rel_l2 = 0, score_ms = 0;
  };
  SsFlowOptions best;
  double default_ms = 0, best_ms = 0;  // score: the sampler's forwards (guided steps at batch 2 + the rest at batch 1)
  int checked = 0, rejected = 0, failed = 0, duplicates = 0;
  double latent_rel_l2 = -1;  // final latent of the best int8 choice vs the reference path (-1: not run)
  bool int8_dropped = false;  // the int8 choice missed latent_budget; the best f32 choice was kept
  bool budget_hit = false;
  double seconds = 0;
  std::vector<Row> rows;
  nlohmann::json to_json() const;
  std::string table() const;
};

// `model` is left under the best options with its context set to the tuner's fixed one.
SsFlowTuneResult tune_ss_flow(SsFlowModel& model, const SsFlowTuneOptions& options);

}  // namespace ember::trellis
