// A SparseStructureFlowModel with random weights (fixed seed) in pack encoding, for tests and
// benchmarks: the same tensors, names and shapes a real stage has.
#pragma once

#include <cstdint>

#include "trellis/ss_flow_config.h"
#include "trellis/stage_tensors.h"

namespace ember::trellis {

MemoryTensors synth_ss_flow(const SsFlowConfig& config, uint64_t seed);
// The seed shape (DiT-B), seed 1: what `--synthetic` runs.
inline MemoryTensors synth_ss_flow_seed() { return synth_ss_flow(SsFlowConfig::seed(), 1); }

// The absolute position embedding TRELLIS stores as `pos_emb` [tokens][channels].
std::vector<float> position_embedding(const SsFlowConfig& config);

}  // namespace ember::trellis
