// GPU time of a model's decode step as the decode chain runs it: the cache filled to a context,
// then steps back to back, one submit each, each timed from its first dispatch's start to its
// last one's end (the gaps between its dependent dispatches included). What bench llm reports
// as the GPU step, and what ember tune compares whole candidates by.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/llm_pack.h"
#include "llm/lfm2_model.h"
#include "llm/lfm2_weights.h"

namespace ember::tune {

// A new sequence: `context_ids` prefilled from position 0 and `next_ids` stored after them in the
// model's tokens(), where the next decode steps read their ids; waits for the GPU.
void fill_context(llm::Lfm2Model& model, std::span<const uint32_t> context_ids, std::span<const uint32_t> next_ids);

// Prefills `context_ids` from position 0, then runs one decode step per id of `next_ids` (each
// reads its token from the model's tokens()); returns each step's GPU microseconds, in order.
// Needs a device with exact timestamps (gpu::Profiler). `left_out`: a kernel label whose dispatches
// are not recorded (gpu::Recorder::leave_out), to time the step without it; the results are then wrong.
std::vector<double> decode_step_gpu_us(llm::Lfm2Model& model, std::span<const uint32_t> context_ids, std::span<const uint32_t> next_ids,
                                       const std::string& left_out = {});

// The median GPU step of `pack`'s weights (already on the GPU: `weights`) under each of `files`'
// kernel choices, at `context` positions over `steps` steps (random ids). The models are timed in
// turn, twice, so that a drift of the clocks meets each of them alike, after untimed steps that
// bring the clocks up.
std::vector<double> median_decode_steps(const formats::LlmPack& pack, std::shared_ptr<const llm::Lfm2Weights> weights,
                                        gpu::KernelCache& kernels, const std::vector<formats::RuntimeFile>& files, uint32_t context,
                                        uint32_t steps);

}  // namespace ember::tune
