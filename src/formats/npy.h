// .npy: numpy's one-array file, the interchange format for latents, contexts, logits and noise.
// Reader: versions 1.0 and 2.0, little-endian f32/f16, C order, any rank. Writer: version 1.0
// (header padded with spaces so the data starts on a 64-byte boundary, as numpy writes it),
// atomic.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace ember::formats {

enum class NpyDType { F32, F16 };
const char* npy_descr(NpyDType d);  // "<f4", "<f2"
size_t npy_dtype_size(NpyDType d);

struct NpyArray {
  NpyDType dtype = NpyDType::F32;
  std::vector<int64_t> shape;  // () for a scalar
  std::vector<uint8_t> bytes;  // little-endian, C order
  int64_t numel() const;
  // The values as f32 (f16 converted, round trip exact).
  std::vector<float> to_f32() const;
};

// Parses a whole .npy file image; `where` names it in errors (unsupported dtype, Fortran order,
// bad magic/version, malformed header, truncated or oversized data).
NpyArray parse_npy(std::span<const uint8_t> file, const std::string& where);
NpyArray read_npy(const std::filesystem::path& path);

// The complete version-1.0 header (magic, version, length, dict, padding, '\n').
std::vector<uint8_t> npy_header(NpyDType dtype, std::span<const int64_t> shape);

// Writes atomically. `bytes` must hold exactly numel(shape) elements of `dtype`.
void write_npy(const std::filesystem::path& path, NpyDType dtype, std::span<const int64_t> shape,
               std::span<const uint8_t> bytes);
void write_npy_f32(const std::filesystem::path& path, std::span<const int64_t> shape, std::span<const float> values);
// f32 values rounded to f16 (nearest even) and written as '<f2'.
void write_npy_f16(const std::filesystem::path& path, std::span<const int64_t> shape, std::span<const float> values);

}  // namespace ember::formats
