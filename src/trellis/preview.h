// A preview of the decoded shape without a viewer: the iso-surface of the logits (the surface the
// mesh is extracted from) from four sides, ray-marched on the GPU (kernels/iso_raymarch.h) into a
// 2 x 2 RGBA image, read back and written as PNG.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "gpu/kernel.h"

namespace ember::trellis {

struct PreviewImage {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgba;
};

// field [n0][n1][n2] (occupied > iso), z (axis 2) up; four orthographic views around the up axis,
// 20 degrees above the horizon, azimuths 30 + 90 k degrees, each `view` pixels square; the box
// [-0.5, 0.5]^3 fills about 70% of each view.
PreviewImage render_preview(gpu::KernelCache& kernels, std::span<const float> field, std::array<uint32_t, 3> n,
                            uint32_t view = 256, float iso = 0.0f);

// The PNG of render_preview, written atomically.
void write_preview_png(const std::filesystem::path& path, const PreviewImage& image);

}  // namespace ember::trellis
