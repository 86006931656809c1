// Where the ss-flow engine gets a stage: a stage pack on disk (sha256 verified) seen as a
// TensorSource, or synthetic weights encoded in memory exactly as the packer would; and the
// configuration the engine runs, read from the tensor shapes and checked against what its
// kernels implement.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "formats/ss_flow_config.h"
#include "formats/trellis_pack.h"
#include "trellis/stage_tensors.h"

namespace ember::trellis {

// A StagePack as a TensorSource; the pack keeps the mapped shards alive.
class PackTensors : public TensorSource {
 public:
  explicit PackTensors(formats::StagePack pack) : pack_(std::move(pack)) {}
  bool has(const std::string& name) const override { return pack_.has(name); }
  TensorView get(const std::string& name) const override;
  std::map<std::string, std::vector<int64_t>> shapes() const override;
  std::string origin() const override { return (pack_.dir() / formats::kStageManifestFile).string(); }
  const formats::StagePack& pack() const { return pack_; }

 private:
  formats::StagePack pack_;
};

// Opens `dir` (every shard's sha256 checked) and checks it is a sparseStructureFlow stage; throws
// ember::Error naming the directory otherwise.
std::unique_ptr<PackTensors> open_ss_flow_stage(const std::filesystem::path& dir);

// The model's hyper-parameters from the tensor shapes (formats::infer_ss_flow_config), checked
// against what the engine implements: heads of 64 channels, q/k RMS norm on self-attention only,
// per-block modulation. Throws ember::Error naming the tensor or field.
formats::SsFlowConfig ss_flow_config_of(const TensorSource& source);

// Random weights (formats::synth_ss_flow_weights, the same numbers `ember synth trellis-ss-flow
// --seed` writes) in pack encoding, in memory: what `--synthetic` runs.
MemoryTensors synth_ss_flow_stage(const formats::SsFlowConfig& config, uint64_t seed);

}  // namespace ember::trellis
