// CPU reference dequantizer for the stage pack's symmetric-quantized tensors, written from the
// docs/formats.md prose alone: walk the bytes in storage order (tile t, then group g, then the 16x64
// block row-major; scales [tile][group][16]) and place each value at (16t + i, 64g + j).
#pragma once

#include <cstdint>
#include <cmath>
#include <cstring>
#include <vector>

namespace ember::reference {

inline float half_to_float(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 31, mant = h & 1023;
  double v;
  if (exp == 0) {
    v = mant / 1024.0 / 16384.0;  // subnormal: mant * 2^-24
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = (1.0 + mant / 1024.0) * std::ldexp(1.0, exp - 15);
  }
  return static_cast<float>(sign ? -v : v);
}

// Returns row-major [rows][columns]; padding rows/columns are dropped.
inline std::vector<float> dequantize_int8_tile_major(const uint8_t* data, const uint8_t* scales, int64_t rows,
                                                     int64_t columns, int64_t group = 64, int64_t tile = 16) {
  const int64_t padded_rows = (rows + tile - 1) / tile * tile;
  const int64_t padded_cols = (columns + group - 1) / group * group;
  std::vector<float> out(static_cast<size_t>(rows * columns), 0.0f);
  size_t byte = 0, scale = 0;
  for (int64_t t = 0; t < padded_rows / tile; t++) {
    for (int64_t g = 0; g < padded_cols / group; g++) {
      for (int64_t i = 0; i < tile; i++) {
        for (int64_t j = 0; j < group; j++, byte++) {
          int64_t r = t * tile + i, c = g * group + j;
          if (r >= rows || c >= columns) continue;
          uint16_t s;
          std::memcpy(&s, scales + 2 * (scale + static_cast<size_t>(i)), 2);
          out[static_cast<size_t>(r * columns + c)] = static_cast<float>(static_cast<int8_t>(data[byte])) * half_to_float(s);
        }
      }
      scale += static_cast<size_t>(tile);
    }
  }
  return out;
}

}  // namespace ember::reference
