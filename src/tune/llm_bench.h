// `ember bench llm`: what one decoded token costs on this GPU, against what it must cost.
// Time to first token, prefill throughput, decode throughput at several cache lengths (the
// generator's pipeline: greedy sampling on the GPU, steps in flight), dispatches and bytes per
// token, achieved bandwidth, and the floor max(bytes / bandwidth, dispatches x per-dispatch
// cost) from the measured ceilings; the prefill's chunks, dispatches, achieved TFLOP/s and
// per-kernel GPU profile; optionally a per-kernel GPU breakdown of one decode step.
// Medians over repeats after one warm-up. JSON fields are documented in to_json().
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/generator.h"
#include "llm/lfm2_model.h"
#include "tune/ceilings.h"

namespace ember::tune {

struct LlmBenchOptions {
  uint32_t prompt = 1024;                      // prompt tokens for time to first token / prefill
  uint32_t gen = 256;                          // decode steps timed at each context
  std::vector<uint32_t> contexts{128, 1024, 2048};
  int repeats = 3;                             // timed runs after one warm-up (medians)
  uint32_t in_flight = llm::GenerateOptions{}.in_flight;                // generator steps submitted ahead
  uint32_t steps_per_submit = llm::GenerateOptions{}.steps_per_submit;  // generator steps per submit
  bool profile = false;                        // per-kernel breakdown of a decode step per context
  uint32_t profile_steps = 4;                  // decode steps the breakdown averages
};

struct KernelCost {  // one kernel label of the per-dispatch profile, per decode step
  std::string kernel;
  double dispatches = 0, us = 0;  // us: each dispatch timed alone, in its own pass
  uint64_t bytes = 0;       // bytes it reads per step, where known (0: not computed)
  double floor_us = 0;      // max(bytes / bandwidth, dispatches x per-dispatch GPU cost)
  // What its dispatches add to the step's chain: the step in one pass less the same step without
  // them (can be below zero within noise, or when leaving a kernel out slows another).
  double chain_us = 0;
  double chain_floor_us = 0;  // its stages x a dependent stage's cost + bytes / bandwidth
};

struct PrefillKernelCost {  // one kernel label of the per-dispatch profile of one prefill
  std::string kernel;
  size_t dispatches = 0;
  double us = 0;
  double flops = 0;         // arithmetic it does, where known (matmuls, attention, head; 0: not counted)
};

struct ContextBench {
  uint32_t context = 0;
  uint32_t gen = 0;              // decode steps timed (options.gen, fewer where the cache ends first)
  std::string skipped;           // non-empty: why not measured (capacity)
  double decode_tok_s = 0;       // generator wall clock (sampling included), median
  double step_gpu_us = 0;        // GPU time of one decode step (no sampler), timestamps, median
  double step_wall_us = 0;       // wall clock per step when steps are submitted back to back (no sampler)
  size_t dispatches = 0;         // per decode step at this context (flash-decoding adds some at long ones)
  size_t stages = 0;             // dependent stages per decode step (Lfm2Model::decode_stages)
  uint64_t bytes = 0;            // weights + KV cache read by one step at this context
  double achieved_gbps = 0;      // bytes / step_gpu_us
  double floor_us = 0, bandwidth_floor_us = 0, dispatch_floor_us = 0;
  double chain_floor_us = 0;     // stages x a dependent stage's cost + bandwidth_floor_us (the step's realistic floor)
  std::vector<KernelCost> kernels;  // --profile
  double profile_step_us = 0;       // --profile: the step in one pass, as the chain_us runs time it
};

struct LlmBenchResult {
  nlohmann::json device;
  Ceilings ceilings;
  LlmBenchOptions options;
  uint32_t prompt = 0;                 // prompt tokens actually used (bounded by capacity)
  double ttft_ms = 0;                  // wall: prefill + first sampled id on the CPU (median)
  int ttft_warmup_runs = 0;            // first-token runs before the timed ones,
  double ttft_warmup_ms = 0;           // and their wall time (at least kWarmupMs)
  double prefill_ms = 0, prefill_tok_s = 0;  // wall: prefill alone (median)
  double prefill_gpu_ms = -1;          // sum of per-dispatch GPU times of one prefill (-1: not measurable)
  std::string prefill_gpu_note;
  size_t prefill_chunks = 0, prefill_dispatches = 0;  // submits and dispatches of one prefill (all chunks)
  double prefill_flops = 0;            // matmuls + causal attention + the head for the last token
  double prefill_tflops = 0;           // prefill_flops / prefill_ms (wall)
  std::vector<PrefillKernelCost> prefill_kernels;  // per-dispatch GPU profile of one prefill
  size_t dispatches = 0;               // per decode step at the last context (Lfm2Model::decode_dispatches)
  uint32_t residual_mlp_workgroups = 0;  // the one-dispatch residual MLP's grid (0: off)
  uint64_t weight_bytes = 0;           // per decode step (Lfm2Model::decode_weight_bytes)
  std::string candidate_key, down_copy;
  std::vector<ContextBench> contexts;
  nlohmann::json to_json() const;
  std::string table() const;
};

LlmBenchResult bench_llm(llm::Lfm2Model& model, llm::Generator& generator, const Ceilings& ceilings, const LlmBenchOptions& options);

}  // namespace ember::tune
