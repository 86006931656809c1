#include "trellis/stage_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "formats/int8_tiles.h"
#include "formats/safetensors.h"
#include "formats/trellis_packer.h"

namespace ember::trellis {

using formats::f16_to_f32;
using formats::f32_to_f16;

HostTensor quantize_matrix(const std::vector<float>& w, int64_t rows, int64_t columns) {
  const formats::Int8TileLayout layout{rows, columns, uint32_t(kQuantGroup), uint32_t(kOutputTile)};
  formats::Int8Tiles q = formats::quantize_int8_tiles(w, layout, "quantize_matrix");
  HostTensor t;
  t.shape = {rows, columns};
  t.quantized = true;
  t.rows = rows;
  t.columns = columns;
  t.padded_rows = layout.padded_rows();
  t.padded_columns = layout.padded_columns();
  t.data.resize(q.data.size());
  std::memcpy(t.data.data(), q.data.data(), q.data.size());
  t.scales.resize(q.scales.size() * 2);
  std::memcpy(t.scales.data(), q.scales.data(), t.scales.size());
  return t;
}

HostTensor raw_f16(const std::vector<float>& v, std::vector<int64_t> shape) {
  HostTensor t;
  t.shape = std::move(shape);
  t.data.resize(v.size() * 2);
  for (size_t i = 0; i < v.size(); i++) {
    uint16_t h = f32_to_f16(v[i]);
    std::memcpy(&t.data[i * 2], &h, 2);
  }
  return t;
}

std::vector<float> dequantize(const TensorView& t) {
  if (!t.quantized) {
    std::vector<float> out(t.data.size() / 2);
    for (size_t i = 0; i < out.size(); i++) {
      uint16_t h;
      std::memcpy(&h, &t.data[i * 2], 2);
      out[i] = f16_to_f32(h);
    }
    return out;
  }
  const formats::Int8TileLayout layout{t.rows, t.columns, uint32_t(kQuantGroup), uint32_t(kOutputTile)};
  if (layout.padded_rows() != t.padded_rows || layout.padded_columns() != t.padded_columns)
    throw Error("padded shape " + std::to_string(t.padded_rows) + "x" + std::to_string(t.padded_columns) +
                    " does not follow from " + std::to_string(t.rows) + "x" + std::to_string(t.columns),
                "tensor " + t.name, "repack the stage");
  return formats::dequantize_int8_tiles(t.data, t.scales, layout);
}

TensorView MemoryTensors::get(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw Error("tensor missing", "tensor " + name, "the stage is incomplete or of another model");
  const HostTensor& h = it->second;
  return TensorView{name, h.shape, h.quantized, h.rows, h.columns, h.padded_rows, h.padded_columns, h.data, h.scales};
}

std::map<std::string, std::vector<int64_t>> MemoryTensors::shapes() const {
  std::map<std::string, std::vector<int64_t>> s;
  for (const auto& [name, t] : tensors) s[name] = t.shape;
  return s;
}

MemoryTensors encode_stage_tensors(const std::map<std::string, std::vector<float>>& weights,
                                   const std::map<std::string, std::vector<int64_t>>& shapes) {
  MemoryTensors m;
  for (const auto& [name, shape] : shapes) {
    auto it = weights.find(name);
    if (it == weights.end()) throw Error("tensor missing", "tensor " + name, "give every tensor of the model");
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    if (int64_t(it->second.size()) != numel)
      throw Error(std::to_string(it->second.size()) + " values where the shape holds " + std::to_string(numel), "tensor " + name);
    if (formats::stage_tensor_is_quantized(name, shape)) {
      HostTensor t = quantize_matrix(it->second, shape[0], numel / shape[0]);
      t.shape = shape;
      m.tensors[name] = std::move(t);
    } else {
      m.tensors[name] = raw_f16(it->second, shape);
    }
  }
  return m;
}

}  // namespace ember::trellis
