// The int8 group-quantized, tile-major matrix layout of TRELLIS stage packs (docs/formats.md, seed 004).
//
// A [rows][columns] matrix is padded with zeros to padded_rows = rows rounded up to output_tile
// (16) and padded_columns = columns rounded up to group_size (64). Tile t holds rows
// 16t..16t+15, group g columns 64g..64g+63. Tiles are the OUTER loop, groups the inner one:
//   data   (int8):  block (t, g) at byte ((t * groups + g) * 16 * 64), row-major inside
//                   (element (r, c) at + (r % 16) * 64 + c % 64);
//   scales (f16):   [tile][group][16], the scale of row r in group g at f16 index
//                   (t * groups + g) * 16 + r % 16.
// So one tile of output rows is contiguous (a matmul workgroup owning 16 rows reads one run of
// bytes). Symmetric: w = q * scale, q in [-127, 127]; scale = f16(max|w| / 127) per row and group.
// Byte counts alone cannot tell tile-outer from group-outer; this order is the one docs/formats.md names
// ("for tile t and group g"), and every reader in ember (GPU kernels, dequantizers) uses it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ember::formats {

struct Int8TileLayout {
  int64_t rows = 0, columns = 0;
  uint32_t group_size = 64, output_tile = 16;

  int64_t padded_rows() const;
  int64_t padded_columns() const;
  int64_t tiles() const { return padded_rows() / output_tile; }
  int64_t groups() const { return padded_columns() / group_size; }
  uint64_t data_bytes() const;   // padded_rows * padded_columns
  uint64_t scale_bytes() const;  // padded_rows * groups * 2
  uint64_t data_index(int64_t r, int64_t c) const;   // byte of element (r, c)
  uint64_t scale_index(int64_t r, int64_t c) const;  // f16 element holding (r, c)'s scale
};

struct Int8Tiles {
  std::vector<int8_t> data;       // data_bytes()
  std::vector<uint16_t> scales;   // f16 bits, scale_bytes() / 2
};

// Quantizes row-major `w` ([rows][columns]); throws ember::Error naming `what` on NaN/Inf or a
// scale beyond f16's range. The error per element is at most half its scale.
Int8Tiles quantize_int8_tiles(std::span<const float> w, const Int8TileLayout& layout, const char* what);

// Row-major [rows][columns] f32, padding dropped.
std::vector<float> dequantize_int8_tiles(std::span<const uint8_t> data, std::span<const uint8_t> scales,
                                         const Int8TileLayout& layout);

}  // namespace ember::formats
