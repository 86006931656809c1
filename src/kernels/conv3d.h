// 3x3x3 convolution (stride 1, zero padding 1) over channels-last f32 volumes with int8
// group-quantized weights, as an implicit GEMM (src/kernels/conv3d.wgsl).
#pragma once

#include "kernels/dispatch.h"
#include "kernels/qmatmul.h"

namespace ember::kernels {

struct Conv3dArgs {
  const gpu::Buffer* x;         // f32 [d][h][w][cin]
  const QuantizedMatrix* w;     // [cout][cin * 27] (rows = cout, cols = cin * 27), f16 bias [cout]
  const gpu::Buffer* y;         // f32 [d][h][w][cout]
  uint32_t d, h, w_size;        // spatial extent (input = output)
  const gpu::Buffer* residual = nullptr;  // f32 [d][h][w][cout] added to the output; not y itself
  uint32_t rows_per_workgroup = 64;       // 16, 32 or 64 (clamped to the weight's padded rows)
};

Dispatch conv3d(gpu::KernelCache& kernels, const Conv3dArgs& args, const std::string& region = "");

}  // namespace ember::kernels
