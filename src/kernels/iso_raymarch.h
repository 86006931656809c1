// Orthographic ray-marched views of a scalar grid's iso-surface into an RGBA8 image
// (src/kernels/iso_raymarch.wgsl).
#pragma once

#include <array>
#include <vector>

#include "kernels/dispatch.h"

namespace ember::kernels {

struct IsoCamera {
  std::array<float, 3> eye, right, up, forward;  // right/up/forward unit and orthogonal
  float half_extent;                              // the view spans [-e, e] along right and up
};

struct IsoRaymarchArgs {
  const gpu::Buffer* field;  // f32 [n0][n1][n2]
  const gpu::Buffer* image;  // u32 RGBA8 [height][width]
  std::array<uint32_t, 3> n;
  uint32_t view;             // pixels per view side
  std::vector<IsoCamera> cameras;  // 1 to 4; the image is 2 views wide (1 for one view), 2 high for 3-4
  float iso = 0.0f;
};

// Image size for these arguments.
uint32_t iso_image_width(const IsoRaymarchArgs& args);
uint32_t iso_image_height(const IsoRaymarchArgs& args);

Dispatch iso_raymarch(gpu::KernelCache& kernels, const IsoRaymarchArgs& args, const std::string& region = "");

}  // namespace ember::kernels
