// Tensors of a TRELLIS stage in the pack's encodings (docs/formats.md "TRELLIS stage pack"), as the
// model loader consumes them: from a StagePack on disk, or built in memory by tests and synthesis.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace ember::trellis {

// Quantization geometry of the pack (fixed by the format).
inline constexpr int64_t kQuantGroup = 64;   // columns per f16 scale
inline constexpr int64_t kOutputTile = 16;   // rows per tile

// How the 16x64 blocks of a symmetric-quantized tensor are ordered: tile outer, group inner, as
// formats/int8_tiles.h (which owns the layout; the quantizer and dequantizer live there) defines.
// Returns the block number of (tile, group); its int8 data starts at byte block * 1024 and its 16
// scales at f16 index block * 16. The WGSL twin is `quant_block_index` in
// src/kernels/qmatmul.wgsl: change all three together.
inline int64_t quant_block_index(int64_t tile, int64_t group, int64_t tiles, int64_t groups) {
  (void)tiles;
  return tile * groups + group;
}

// One tensor as the pack stores it; the spans point into memory the source keeps alive.
struct TensorView {
  std::string name;
  std::vector<int64_t> shape;
  bool quantized = false;  // "symmetric-quantized" (int8, bits 8); otherwise "raw" f16
  int64_t rows = 0, columns = 0, padded_rows = 0, padded_columns = 0;  // quantized only
  std::span<const uint8_t> data;    // raw: f16 little-endian row-major; quantized: int8 tile-major
  std::span<const uint8_t> scales;  // quantized: f16 [block][16]
};

// Where a model gets its tensors: a pack (trellis/ss_flow_stage.h), or memory.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual bool has(const std::string& name) const = 0;
  virtual TensorView get(const std::string& name) const = 0;  // throws ember::Error if absent
  // Every tensor's name and shape (the model's hyper-parameters follow from them).
  virtual std::map<std::string, std::vector<int64_t>> shapes() const = 0;
  // Where the tensors come from, for error messages (a pack's manifest path, "memory").
  virtual std::string origin() const = 0;
};

// A tensor held in memory, in pack encoding.
struct HostTensor {
  std::vector<int64_t> shape;
  bool quantized = false;
  int64_t rows = 0, columns = 0, padded_rows = 0, padded_columns = 0;
  std::vector<uint8_t> data, scales;
};

// Symmetric int8 quantization of a row-major [rows][columns] matrix with the packer's quantizer
// (formats::quantize_int8_tiles: scale = f16(max|w| / 127) per 64-column group of a row).
HostTensor quantize_matrix(const std::vector<float>& w, int64_t rows, int64_t columns);
// A raw f16 tensor (values rounded to f16).
HostTensor raw_f16(const std::vector<float>& v, std::vector<int64_t> shape);
// The values the GPU computes with: dequantized (w = q * scale) or f16 widened, row-major, unpadded.
std::vector<float> dequantize(const TensorView& t);

class MemoryTensors : public TensorSource {
 public:
  std::map<std::string, HostTensor> tensors;
  bool has(const std::string& name) const override { return tensors.count(name) > 0; }
  TensorView get(const std::string& name) const override;
  std::map<std::string, std::vector<int64_t>> shapes() const override;
  std::string origin() const override { return "in-memory stage tensors"; }
};

// f32 tensors (state-dict name -> row-major values of `shapes`) in the encodings `ember pack
// trellis` writes (formats::stage_tensor_is_quantized decides int8 or raw f16), held in memory.
MemoryTensors encode_stage_tensors(const std::map<std::string, std::vector<float>>& weights,
                                   const std::map<std::string, std::vector<int64_t>>& shapes);

}  // namespace ember::trellis
