// CPU reference for TRELLIS SparseStructureDecoder, written from upstream's module definitions
// (docs/trellis-ss-decoder.md) with plain loops and double accumulators, channel-first
// [C][D][H][W] like PyTorch's NCDHW at batch 1. The oracle for the conv3d / channel LayerNorm /
// pixel-shuffle kernels and the decoder graph; independent of them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "formats/ss_decoder_config.h"

namespace ember::reference {

struct Volume {
  int64_t channels = 0, d = 0, h = 0, w = 0;
  std::vector<float> v;  // [channels][d][h][w]
  int64_t voxels() const { return d * h * w; }
};

// nn.Conv3d(in, out, 3, padding=1): w [out][in][3][3][3], b [out]; zero padding, stride 1.
Volume conv3d(const Volume& x, const std::vector<float>& w, const std::vector<float>& b, int64_t out);
// ChannelLayerNorm32: LayerNorm over the channels at every voxel (eps 1e-5, weight and bias),
// then SiLU where `silu`.
Volume channel_layer_norm(const Volume& x, const std::vector<float>& weight, const std::vector<float>& bias,
                          bool silu, double eps = 1e-5);
// pixel_shuffle_3d(x, 2): [C*8][D][H][W] -> [C][2D][2H][2W], input channel c*8 + 4a + 2b + e
// going to output (2d + a, 2h + b, 2w + e).
Volume pixel_shuffle_3d(const Volume& x);

// The whole decoder: latent [latent_channels][R][R][R] -> logits [out_channels][R*u]^3
// (u = config.upsampling()). `w` holds every state-dict tensor as f32 row-major.
Volume ss_decoder_forward(const formats::SsDecoderConfig& c, const std::map<std::string, std::vector<float>>& w,
                          const Volume& latent);

}  // namespace ember::reference
