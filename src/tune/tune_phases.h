// The phases of `ember tune` (tuner.h), one function each, run in order by tune_llm: each searches
// one kind of choice until its own point of the budget and records what it found in the
// TuneResult. Internal to src/tune.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "gpu/device.h"
#include "llm/lfm2_weights.h"
#include "tune/kernel_timer.h"
#include "tune/tuner.h"

namespace ember::tune {

// What every phase reads (the pack, its uploaded weights, the timer, the options) and the result
// they fill in turn; a phase reads the choices of the phases before it from `res`.
struct TuneContext {
  const formats::LlmPack& pack;
  const gpu::Device& device;
  gpu::KernelCache& kernels;
  std::shared_ptr<const llm::Lfm2Weights> weights;
  KernelTimer& timer;
  const TuneOptions& options;
  TuneResult& res;
  Clock::time_point t0;  // the budget counts from here (the weight upload included)
  double budget = 0;     // seconds
  // mlpPair: kept from the input unless --allow-mlp-pair (then decided by the whole decode step,
  // the fused MLP against the unfused path as tuned).
  bool pair_fixed_on = false, search_mlp_phase = false, pair_by_step = false;
  bool has_attention = false;
  int64_t capacity = 0;  // positions the model holds (the flash and prefill searches stay within)
  Clock::time_point matvec_done{};  // when the matvec phase ended (the norm phase's pace)

  void say(const std::string& line) const {
    if (options.progress) options.progress(line);
  }
};

// A phase: searches until `end` seconds after ctx.t0 (later phases absorb an overrun).
using TunePhase = void (*)(TuneContext& ctx, double end);
void tune_matvec_phase(TuneContext& ctx, double end);        // variant x geometry per matrix shape
void tune_norm_phase(TuneContext& ctx, double end);          // normFuse
void tune_flash_phase(TuneContext& ctx, double end);         // flash-decoding blocks per position
void tune_mlp_phase(TuneContext& ctx, double end);           // the fused MLP (mlpPair)
void tune_residual_mlp_phase(TuneContext& ctx, double end);  // out projection + MLP as one dispatch
void tune_step_phase(TuneContext& ctx, double end);          // what only whole decode steps rank
void tune_prefill_phase(TuneContext& ctx, double end);       // prefill matmul geometry per shape

// `input` with the choices `res` made (tuner.cpp).
formats::RuntimeFile tuned_file(const formats::RuntimeFile& input, const TuneResult& res, int64_t capacity);

inline std::string fixed2(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

inline Clock::time_point at(Clock::time_point t0, double seconds) {
  return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

inline formats::Geometry to_format(const kernels::MatvecGeometry& g) {
  formats::Geometry f;
  f.workgroup_size = g.workgroup_size;
  f.subgroup_size = g.subgroup_size;
  f.rows_per_subgroup = g.rows_per_subgroup;
  f.subgroups_per_row = g.subgroups_per_row;
  return f;
}

}  // namespace ember::tune
