#include "cli/ss_flow_source.h"

#include <filesystem>

#include "common/error.h"
#include "formats/npy.h"
#include "trellis/ss_flow_stage.h"

namespace ember::cli {

void SsFlowSource::add_to(CLI::App& cmd) {
  cmd.add_option("--stage", stage_, "the sparseStructureFlow stage directory (`ember pack trellis --stage ss-flow`)");
  cmd.add_flag("--synthetic", synthetic_, "random weights of the seed shape instead of a stage (for testing)");
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
