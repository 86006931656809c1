// Copies stage tensors (pack encoding) into GPU buffers, as the kernels read them.
#pragma once

#include <string>
#include <vector>

#include "gpu/device.h"
#include "kernels/qmatmul.h"
#include "trellis/stage_tensors.h"

namespace ember::trellis {

// Bytes into a storage buffer padded to whole u32 words (f16 tensors of odd length).
gpu::Buffer upload_bytes(const gpu::Device& device, std::span<const uint8_t> bytes, const std::string& label);
// A symmetric-quantized matrix with its raw f16 bias.
kernels::QuantizedMatrix upload_linear(const gpu::Device& device, const TensorView& weight, const TensorView& bias);
// Matrices of the same columns stacked along rows into one (each of whole 16-row tiles), so one
// matmul computes all their outputs side by side, e.g. every block's adaLN modulation at once.
struct LinearView {
  TensorView weight, bias;
};
kernels::QuantizedMatrix upload_stacked_linears(const gpu::Device& device, const std::vector<LinearView>& parts,
                                                const std::string& label);
// A raw f16 tensor as it is stored (kernels unpack it).
gpu::Buffer upload_raw(const gpu::Device& device, const TensorView& t);
// Any tensor widened to f32 on the host (dequantized if quantized), e.g. the position embedding.
gpu::Buffer upload_as_f32(const gpu::Device& device, const TensorView& t);

}  // namespace ember::trellis
