// 3D pixel shuffle by 2 on channels-last volumes (src/kernels/pixel_shuffle3d.wgsl).
#pragma once

#include "kernels/dispatch.h"

namespace ember::kernels {

// x f32 [d][h][w][c * 8] -> y f32 [2d][2h][2w][c].
Dispatch pixel_shuffle3d(gpu::KernelCache& kernels, const gpu::Buffer& x, const gpu::Buffer& y, uint32_t d, uint32_t h,
                         uint32_t w, uint32_t c, const std::string& region = "");

}  // namespace ember::kernels
