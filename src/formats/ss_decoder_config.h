// TRELLIS SparseStructureDecoder hyper-parameters, its state-dict names and shapes, and random
// weights under those names: what the synthesizer writes, the packer expects and the decoder
// graph (src/trellis/ss_decoder.cpp) reads back from a stage's tensor shapes.
// Facts from upstream's code: docs/trellis-ss-decoder.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::formats {

struct SsDecoderConfig {
  int64_t out_channels = 1;
  int64_t latent_channels = 8;
  int64_t num_res_blocks = 2;
  std::vector<int64_t> channels = {512, 128, 32};  // one entry per level; 2x upsampling between levels
  int64_t num_res_blocks_middle = 2;
  std::string norm_type = "layer";  // ChannelLayerNorm32; "group" (GroupNorm32) is not supported
  bool use_fp16 = true;

  int64_t levels() const { return static_cast<int64_t>(channels.size()); }
  int64_t upsampling() const { return int64_t(1) << (levels() - 1); }  // output / latent resolution
  nlohmann::json to_json() const;  // {"name": "SparseStructureDecoder", "args": {...}}
};

// ss_dec_conv3d_16l8_fp16 (TRELLIS-image-large), the decoder the text pipelines use.
SsDecoderConfig ss_decoder_released_config();
// A small configuration for fast tests: channels [32, 16, 8], one res block per level and in the
// middle (a 16^3 latent still decodes to 64^3).
SsDecoderConfig ss_decoder_small_config();

// Accepts {"name": "SparseStructureDecoder", "args": {...}}, the VAE training config
// ({"models": {"decoder": {...}}}) or the flat args; missing keys take upstream's defaults.
SsDecoderConfig parse_ss_decoder_config(const nlohmann::json& j, const std::string& where);
SsDecoderConfig read_ss_decoder_config(const std::string& path);
void check_ss_decoder_config(const SsDecoderConfig& c, const std::string& where);

// Upstream state-dict names -> shapes (Conv3d weights [out, in, 3, 3, 3]).
std::map<std::string, std::vector<int64_t>> ss_decoder_tensor_shapes(const SsDecoderConfig& c);

// The hyper-parameters a set of tensors implies; every implied tensor must be present with its
// shape and no other. Throws ember::Error naming the tensor.
SsDecoderConfig infer_ss_decoder_config(const std::map<std::string, std::vector<int64_t>>& shapes, const std::string& where);

// Deterministic random weights under upstream's names. Conv weights N(0, 1/fan_in) (conv2 of each
// res block N(0, 0.25/fan_in), so the residual stream grows slowly), biases N(0, 0.02^2), norm
// weights 1 + N(0, 0.1^2), norm biases N(0, 0.02^2). Upstream zero-initialises conv2; random
// values exercise every path instead.
std::map<std::string, std::vector<float>> synth_ss_decoder_weights(const SsDecoderConfig& c, uint64_t seed);

}  // namespace ember::formats
