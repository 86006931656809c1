#include "formats/int8_tiles.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/error.h"
#include "formats/safetensors.h"

namespace ember::formats {

int64_t Int8TileLayout::padded_rows() const { return (rows + output_tile - 1) / output_tile * output_tile; }
int64_t Int8TileLayout::padded_columns() const { return (columns + group_size - 1) / group_size * group_size; }
uint64_t Int8TileLayout::data_bytes() const { return static_cast<uint64_t>(padded_rows() * padded_columns()); }
uint64_t Int8TileLayout::scale_bytes() const { return static_cast<uint64_t>(padded_rows() * groups()) * 2; }

uint64_t Int8TileLayout::data_index(int64_t r, int64_t c) const {
  int64_t block = (r / output_tile) * groups() + c / group_size;
  return static_cast<uint64_t>(block * output_tile * group_size + (r % output_tile) * group_size + c % group_size);
}

uint64_t Int8TileLayout::scale_index(int64_t r, int64_t c) const {
  int64_t block = (r / output_tile) * groups() + c / group_size;
  return static_cast<uint64_t>(block * output_tile + r % output_tile);
}

Int8Tiles quantize_int8_tiles(std::span<const float> w, const Int8TileLayout& L, const char* what) {
  if (w.size() != static_cast<size_t>(L.rows * L.columns))
    throw Error("matrix has " + std::to_string(w.size()) + " values, expected " + std::to_string(L.rows * L.columns), what);
  Int8Tiles out;
  out.data.assign(L.data_bytes(), 0);
  out.scales.assign(L.scale_bytes() / 2, 0);  // padding rows and groups: scale 0
  for (int64_t r = 0; r < L.rows; r++) {
    const float* row = w.data() + r * L.columns;
    for (int64_t g = 0; g < L.groups(); g++) {
      int64_t c0 = g * L.group_size, c1 = std::min<int64_t>(c0 + L.group_size, L.columns);
      float amax = 0;
      for (int64_t c = c0; c < c1; c++) {
        if (!std::isfinite(row[c]))
          throw Error("non-finite value at row " + std::to_string(r) + ", column " + std::to_string(c), what,
                      "the checkpoint is damaged; export it again");
        amax = std::max(amax, std::fabs(row[c]));
      }
      if (amax == 0) continue;
      uint16_t sh = f32_to_f16(amax / 127.0f);
      if ((sh & 0x7fff) == 0) sh = 1;  // below f16's smallest subnormal: keep the sign of tiny weights
      float s = f16_to_f32(sh);
      if (!std::isfinite(s))
        throw Error("values up to " + std::to_string(amax) + " need a scale beyond f16's range (row " +
                        std::to_string(r) + ")", what, "int8 quantization supports |w| <= 65504 * 127");
      out.scales[L.scale_index(r, c0)] = sh;
      // The quantum is the f16-rounded scale, so re-quantizing dequantized values is exact.
      for (int64_t c = c0; c < c1; c++) {
        float q = std::clamp(std::nearbyint(row[c] / s), -127.0f, 127.0f);
        out.data[L.data_index(r, c)] = static_cast<int8_t>(q);
      }
    }
  }
  return out;
}

std::vector<float> dequantize_int8_tiles(std::span<const uint8_t> data, std::span<const uint8_t> scales,
                                         const Int8TileLayout& L) {
  if (data.size() != L.data_bytes() || scales.size() != L.scale_bytes())
    throw Error("int8 tile data of " + std::to_string(data.size()) + "+" + std::to_string(scales.size()) +
                " bytes does not match its layout (" + std::to_string(L.data_bytes()) + "+" +
                std::to_string(L.scale_bytes()) + ")", "dequantize_int8_tiles");
  std::vector<float> out(static_cast<size_t>(L.rows * L.columns));
  for (int64_t r = 0; r < L.rows; r++) {
    for (int64_t c = 0; c < L.columns; c++) {
      uint16_t sh;
      std::memcpy(&sh, scales.data() + 2 * L.scale_index(r, c), 2);
      int8_t q = static_cast<int8_t>(data[L.data_index(r, c)]);
      out[r * L.columns + c] = static_cast<float>(q) * f16_to_f32(sh);
    }
  }
  return out;
}

}  // namespace ember::formats
