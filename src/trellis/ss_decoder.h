// TRELLIS SparseStructureDecoder on the GPU: a latent [C][D][H][W] -> occupancy logits
// [out][uD][uH][uW] (u = 2^(levels-1), 4 for the released decoder: 16^3 -> 64^3). Weights from a
// stage (pack or memory); the graph mirrors upstream's modules by state-dict path (input_layer,
// middle_block.i, blocks.j, out_layer), facts in docs/trellis-ss-decoder.md. Activations are
// channels-last f32 volumes; dispatches and bind groups are built once per latent extent.
#pragma once

#include <array>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "formats/ss_decoder_config.h"
#include "gpu/kernel.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "trellis/ss_flow_stage.h"
#include "trellis/stage_tensors.h"

namespace ember::trellis {

inline constexpr const char* kSsDecoderStage = "sparseStructureDecoder";

// Opens `dir` (sha256 checked) and checks it is a sparseStructureDecoder stage.
std::unique_ptr<PackTensors> open_ss_decoder_stage(const std::filesystem::path& dir);
// The config the stage's tensor shapes imply (formats::infer_ss_decoder_config).
formats::SsDecoderConfig ss_decoder_config_of(const TensorSource& source);
// Random weights (formats::synth_ss_decoder_weights) in pack encoding, in memory.
MemoryTensors synth_ss_decoder_stage(const formats::SsDecoderConfig& config, uint64_t seed);

class SsDecoderModel {
 public:
  // `extent`: the latent's spatial size {D, H, W}.
  SsDecoderModel(gpu::KernelCache& kernels, const TensorSource& source, std::array<uint32_t, 3> extent);
  ~SsDecoderModel();
  SsDecoderModel(const SsDecoderModel&) = delete;
  SsDecoderModel& operator=(const SsDecoderModel&) = delete;

  const formats::SsDecoderConfig& config() const { return config_; }
  std::array<uint32_t, 3> latent_extent() const { return extent_; }
  std::array<uint32_t, 3> output_extent() const;

  // GPU side: the latent input (channels-last [D][H][W][C] f32) and the logits
  // ([uD][uH][uW][out] f32, which for out = 1 is upstream's [1][uD][uH][uW]).
  const gpu::Buffer& input() const;
  const gpu::Buffer& output() const;
  void record(gpu::Recorder& rec) const;

  // One latent [C][D][H][W] (upstream's layout without the batch) -> logits [out][uD][uH][uW].
  std::vector<float> decode(std::span<const float> latent, gpu::Profiler* profiler = nullptr);

  double flops() const;  // multiply-adds x 2 of the convolutions

 private:
  struct Impl;
  gpu::KernelCache& kernels_;
  formats::SsDecoderConfig config_;
  std::array<uint32_t, 3> extent_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::trellis
