#include "cli/ss_flow_source.h"

#include <filesystem>

#include "common/error.h"
#include "formats/npy.h"
#include "trellis/ss_flow_candidate.h"
#include "trellis/ss_flow_stage.h"

namespace ember::cli {

void SsFlowSource::add_to(CLI::App& cmd) {
  cmd.add_option("--stage", stage_, "the sparseStructureFlow stage directory (`ember pack trellis --stage ss-flow`)");
  cmd.add_flag("--synthetic", synthetic_, "random weights of the seed shape instead of a stage (for testing)");
  add_candidate_options(cmd, candidate_, no_candidate_);
}

void add_candidate_options(CLI::App& cmd, std::string& file, bool& none) {
  cmd.add_option("--candidate", file,
                 std::string("ss-flow candidate file whose entry for this GPU sets the tuning choices (default: the stage's ") +
                     trellis::kSsFlowCandidateFile + ", written by `ember tune --stage`)");
  cmd.add_flag("--no-candidate", none, "the default tuning choices, ignoring any candidate");
}

trellis::SsFlowOptions candidate_options(const std::string& stage, const std::string& file, bool none,
                                         const gpu::AdapterDescription& adapter, std::string* used) {
  if (used) *used = "defaults";
  if (none) return {};
  if (!file.empty()) {
    auto c = trellis::load_ss_flow_candidate_file(file, adapter);
    if (!c) return {};  // tuned on other GPUs only: this one runs the defaults
    if (used) *used = "candidate " + file;
    return c->options;
  }
  if (stage.empty()) return {};
  return trellis::stage_options(stage, adapter, used);
}

trellis::SsFlowOptions SsFlowSource::options_for(const gpu::AdapterDescription& adapter, std::string* used) const {
  return candidate_options(synthetic_ ? "" : stage_, candidate_, no_candidate_, adapter, used);
}

formats::SsFlowConfig SsFlowSource::open(const std::string& command) {
  if (stage_.empty() == !synthetic_) throw Error("give exactly one of --stage DIR and --synthetic", command);
  if (synthetic_) return formats::ss_flow_text_base_config();
  source_ = trellis::open_ss_flow_stage(stage_);
  return trellis::ss_flow_config_of(*source_);
}

std::unique_ptr<trellis::TensorSource> SsFlowSource::take_tensors() {
  if (synthetic_) return std::make_unique<trellis::MemoryTensors>(trellis::synth_ss_flow_stage(formats::ss_flow_text_base_config(), 1));
  return std::move(source_);
}

void check_output_path(const std::string& path, const std::string& option) { check_output(formats::npy_output(path, option)); }

}  // namespace ember::cli
