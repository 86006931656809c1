// Int8 group-quantized matrix-matrix product with f16 bias over the stage pack's tile-major layout
// (src/kernels/qmatmul.wgsl), with fused epilogues.
#pragma once

#include <vector>

#include "kernels/dispatch.h"

namespace ember::kernels {

// A matrix on the GPU in pack encoding: int8 data (tile-major 16x64 blocks), f16 scales, f16 bias.
struct QuantizedMatrix {
  gpu::Buffer data, scales, bias;
  uint32_t rows = 0, cols = 0, padded_rows = 0, padded_cols = 0;
};

enum class Epilogue { None, Gelu, GatedResidual, Residual, AddRows };

// Workgroup geometry: tile = 8*wg_tokens tokens x rows_per_thread*wg_rows rows; k_step divides 64.
// k_splits > 1: split-K, each tile's K range cut into k_splits chunks (whole 64-column groups)
// summed by a second pass: fills the GPU when a long K has few output tiles (mlp.2).
struct QMatmulGeometry {
  uint32_t wg_tokens = 16, wg_rows = 16, k_step = 16;
  // Workgroup tiles read as vec4 (4 loads per 64 FMAs instead of 16): faster at the seed-004
  // shapes on the GPUs measured (bench/PERFORMANCE.md), so the default.
  bool vec4 = true;
  uint32_t k_splits = 1;
  // The next K step's X and W read into registers while the current one is used; applies where a
  // thread's share of a step is at most 16 X floats and 8 W words (8 k_step / wg_rows and
  // rows_per_thread k_step / (4 wg_tokens)), the plain loads elsewhere.
  bool prefetch = true;
  uint32_t rows_per_thread = 8;  // 8 or 16 (more FMAs per workgroup-memory load, twice the accumulators)
  // The int8 path (qmatmul_i8.wgsl): X quantized per token and 64-column group first, then packed
  // int8 dot products against the weights as stored (adapters with the WGSL language feature
  // packed_4x8_integer_dot_product). k_step, vec4 and prefetch do not apply to it.
  bool int8 = false;
  bool operator==(const QMatmulGeometry&) const = default;
};

struct QMatmulArgs {
  const gpu::Buffer* x;  // f32 [tokens][x_stride], first w.cols columns read
  uint32_t x_stride;
  const QuantizedMatrix* w;
  const gpu::Buffer* y;  // f32 [tokens][y_stride], first w.rows columns written
  uint32_t y_stride;
  uint32_t tokens;
  Epilogue epilogue = Epilogue::None;
  // GatedResidual: gate[(t / tokens_per_batch) * gate_stride + gate_offset + r].
  // AddRows: add[(t % add_period) * rows + r].
  const gpu::Buffer* extra = nullptr;
  uint32_t tokens_per_batch = 1, gate_stride = 0, gate_offset = 0, add_period = 1;
  QMatmulGeometry geometry{};
  // geometry.k_splits > 1: f32 scratch of at least qmatmul_split_floats(...) floats.
  const gpu::Buffer* split_partials = nullptr;
  // geometry.int8: scratch of at least qmatmul_quant_bytes(...) bytes for the quantized X.
  const gpu::Buffer* x_quant = nullptr;
};

// One dispatch; geometry.k_splits must be 1 and geometry.int8 false.
Dispatch qmatmul(gpu::KernelCache& kernels, const QMatmulArgs& args, const std::string& region = "");

// One dispatch, or with k_splits > 1 two: the partial products, then `region + ".sum"`. With
// geometry.int8 the quantization of X comes first, as `region + ".quant"`.
std::vector<Dispatch> qmatmul_dispatches(gpu::KernelCache& kernels, const QMatmulArgs& args, const std::string& region = "");

// Floats of split_partials that a split-K product of `tokens` tokens by `w` needs.
uint64_t qmatmul_split_floats(const QuantizedMatrix& w, uint32_t tokens, uint32_t k_splits);

// Bytes of x_quant that the int8 path needs for `tokens` tokens by `w` (int8 X plus f32 scales).
uint64_t qmatmul_quant_bytes(const QuantizedMatrix& w, uint32_t tokens);

}  // namespace ember::kernels
