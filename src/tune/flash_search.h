// The flash-decoding part of `ember tune`: for each cache length the candidate plans for
// (planPosition and the flashOptima positions), the block count that decodes one attention
// layer fastest, each checked against one block (rel_l2 <= 1e-5); before that, the one-block
// kernel's width (FlashDirect).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "formats/llm_runtime.h"
#include "tune/kernel_timer.h"
#include "tune/matvec_search.h"

namespace ember::tune {

struct FlashPoint {
  uint32_t positions = 0;         // cache length measured
  uint32_t best_blocks = 1;
  double best_us = 0, one_block_us = 0;
  std::vector<std::pair<uint32_t, double>> tried;  // (blocks, us); us < 0: rejected
  bool budget_hit = false;
  nlohmann::json to_json() const;
};

// The one-block (DIRECT) kernel's width, chosen first at the shortest position, where one block
// competes: each power of two from the tile workgroup to the adapter's limit, timed at one block.
struct FlashDirect {
  uint32_t workgroup = 0;                          // best; 0 = not measured (the default rule)
  std::vector<std::pair<uint32_t, double>> tried;  // (threads, us); us < 0: rejected (output differs from the widest)
  nlohmann::json to_json() const;
};

struct FlashResult {
  std::vector<FlashPoint> points;
  FlashDirect direct;
};

struct FlashSearch {
  uint32_t padding = 0;           // the candidate's KV row padding
  uint32_t max_blocks = 64;       // AttentionDecode's default max_blocks (the model's)
};

FlashResult search_flash(gpu::KernelCache& kernels, KernelTimer& timer, const formats::LlmShape& shape,
                                     const std::vector<uint32_t>& positions, const FlashSearch& options, Clock::time_point deadline);

}  // namespace ember::tune
