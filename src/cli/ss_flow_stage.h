// Opening an ss-flow stage for the CLI: a stage pack directory (through src/formats/trellis_pack.h
// once it is in the tree) or random weights of the seed shape (--synthetic).
#pragma once

#include <memory>
#include <string>

#include "trellis/stage_tensors.h"

namespace ember::cli {

// Throws ember::Error when the directory is not a sparseStructureFlow stage.
std::unique_ptr<trellis::TensorSource> open_ss_flow_stage(const std::string& dir);

}  // namespace ember::cli
