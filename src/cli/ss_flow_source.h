// `--stage DIR | --synthetic` for the ss-flow commands: a packed sparseStructureFlow stage (sha256
// verified), or random weights of the seed shape. The config comes first so a command can check
// its input files before any weights are made or the GPU is touched. And the check of output paths.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "formats/ss_flow_config.h"
#include "gpu/adapter.h"
#include "trellis/ss_flow.h"
#include "trellis/stage_tensors.h"

namespace ember::cli {

class SsFlowSource {
 public:
  void add_to(CLI::App& cmd);
  // Opens --stage and returns the config its tensors imply, or the seed shape's for --synthetic.
  // Throws ember::Error unless exactly one of them was given (`command` names the command).
  formats::SsFlowConfig open(const std::string& command);
  // The weights: the opened pack, or (for --synthetic) synth seed 1 encoded as the packer would.
  std::unique_ptr<trellis::TensorSource> take_tensors();
  // The tuning choices to run on `adapter`: --candidate FILE's entry for it, else the stage's
  // candidate file's, else the defaults (also with --no-candidate). `used` says which.
  trellis::SsFlowOptions options_for(const gpu::AdapterDescription& adapter, std::string* used = nullptr) const;

 private:
  std::string stage_, candidate_;
  bool synthetic_ = false, no_candidate_ = false;
  std::unique_ptr<trellis::TensorSource> source_;
};

// --candidate FILE and --no-candidate, bound to `file` and `none`; and what they select for
// `adapter` (a --stage directory's own candidate file where no FILE is given; `stage` may be empty).
void add_candidate_options(CLI::App& cmd, std::string& file, bool& none);
trellis::SsFlowOptions candidate_options(const std::string& stage, const std::string& file, bool none,
                                         const gpu::AdapterDescription& adapter, std::string* used = nullptr);

// Throws ember::Error (naming `option`) when `path` exists or its directory is missing or not
// writable, so a run fails before its work rather than after writing only some of its outputs.
void check_output_path(const std::string& path, const std::string& option);

}  // namespace ember::cli
