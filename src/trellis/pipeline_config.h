// A text-to-3D pipeline folder: the stages and `pipeline.json` naming them, with the sparse-structure
// sampler's settings, in the shape of upstream's pipeline.json ({"name", "args": {"models",
// "sparse_structure_sampler": {"name", "args", "params"}}}). Model entries are stage directories
// relative to the folder: "text_encoder" (ember's textEncoder stage; upstream names the CLIP model
// in "text_cond_model" instead), "sparse_structure_flow_model", "sparse_structure_decoder".
#pragma once

#include <filesystem>
#include <string>

#include "trellis/sampler_options.h"

namespace ember::trellis {

inline constexpr const char* kPipelineFile = "pipeline.json";

struct PipelineConfig {
  std::filesystem::path dir;                             // the folder
  std::string text_encoder = "text_encoder";             // stage directories, relative to dir
  std::string ss_flow = "ss_flow";
  std::string ss_decoder = "ss_decoder";
  SamplerOptions sampler;                                // defaults: the released text pipelines'

  std::filesystem::path text_encoder_dir() const { return dir / text_encoder; }
  std::filesystem::path ss_flow_dir() const { return dir / ss_flow; }
  std::filesystem::path ss_decoder_dir() const { return dir / ss_decoder; }
};

// Reads DIR/pipeline.json; missing sampler params take the defaults. Throws ember::Error naming
// the file and field.
PipelineConfig read_pipeline_config(const std::filesystem::path& dir);
// The text of pipeline.json for `c` (dir is not written).
std::string pipeline_json(const PipelineConfig& c);

}  // namespace ember::trellis
