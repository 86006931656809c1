#include "trellis/stage_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "formats/safetensors.h"

namespace ember::trellis {

using formats::f16_to_f32;
using formats::f32_to_f16;

HostTensor quantize_matrix(const std::vector<float>& w, int64_t rows, int64_t columns) {
  if (int64_t(w.size()) != rows * columns) throw Error("matrix size does not match its shape", "quantize_matrix");
  HostTensor t;
  t.shape = {rows, columns};
  t.quantized = true;
  t.rows = rows;
  t.columns = columns;
  t.padded_rows = (rows + kOutputTile - 1) / kOutputTile * kOutputTile;
  t.padded_columns = (columns + kQuantGroup - 1) / kQuantGroup * kQuantGroup;
  const int64_t tiles = t.padded_rows / kOutputTile, groups = t.padded_columns / kQuantGroup;
  t.data.assign(size_t(t.padded_rows * t.padded_columns), 0);
  t.scales.assign(size_t(tiles * groups * kOutputTile * 2), 0);
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t g = 0; g < groups; g++) {
      float amax = 0;
      for (int64_t c = g * kQuantGroup; c < std::min(columns, (g + 1) * kQuantGroup); c++)
        amax = std::max(amax, std::fabs(w[size_t(r * columns + c)]));
      // The scale actually stored is f16: quantize against it so q * scale is the best we can do.
      const uint16_t scale_h = f32_to_f16(amax / 127.0f);
      const float scale = f16_to_f32(scale_h);
      const int64_t block = quant_block_index(r / kOutputTile, g, tiles, groups);
      const int64_t ri = r % kOutputTile;
      std::memcpy(&t.scales[size_t((block * kOutputTile + ri) * 2)], &scale_h, 2);
      for (int64_t c = g * kQuantGroup; c < std::min(columns, (g + 1) * kQuantGroup); c++) {
        float q = scale > 0 ? std::round(w[size_t(r * columns + c)] / scale) : 0.0f;
        q = std::clamp(q, -127.0f, 127.0f);
        t.data[size_t(block * kOutputTile * kQuantGroup + ri * kQuantGroup + (c % kQuantGroup))] =
            static_cast<uint8_t>(static_cast<int8_t>(q));
      }
    }
  }
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
  const int64_t tiles = t.padded_rows / kOutputTile, groups = t.padded_columns / kQuantGroup;
  if (int64_t(t.data.size()) < t.padded_rows * t.padded_columns || int64_t(t.scales.size()) < tiles * groups * kOutputTile * 2)
    throw Error("quantized tensor data or scales shorter than its padded shape", "tensor " + t.name);
  std::vector<float> out(size_t(t.rows * t.columns));
  for (int64_t r = 0; r < t.rows; r++) {
    for (int64_t c = 0; c < t.columns; c++) {
      const int64_t block = quant_block_index(r / kOutputTile, c / kQuantGroup, tiles, groups);
      const int64_t ri = r % kOutputTile;
      uint16_t h;
      std::memcpy(&h, &t.scales[size_t((block * kOutputTile + ri) * 2)], 2);
      const int8_t q = static_cast<int8_t>(t.data[size_t(block * kOutputTile * kQuantGroup + ri * kQuantGroup + c % kQuantGroup)]);
      out[size_t(r * t.columns + c)] = float(q) * f16_to_f32(h);
    }
  }
  return out;
}

TensorView MemoryTensors::get(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw Error("tensor missing", "tensor " + name, "the stage is incomplete or of another model");
  const HostTensor& h = it->second;
  return TensorView{name, h.shape, h.quantized, h.rows, h.columns, h.padded_rows, h.padded_columns, h.data, h.scales};
}

}  // namespace ember::trellis
