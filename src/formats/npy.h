// .npy: numpy's one-array file, the interchange format for latents, contexts, logits, noise and
// token ids. Reader: versions 1.0 and 2.0, little-endian f32/f16 and i32/i64/u32 (ids), C order,
// any rank. Writer: version 1.0 (header padded with spaces so the data starts on a 64-byte
// boundary, as numpy writes it), atomic; NpyRowWriter streams arrays too large to hold at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/output_guard.h"

namespace ember {
class AtomicFileWriter;
}

namespace ember::formats {

enum class NpyDType { F32, F16, I32, I64, U32 };
const char* npy_descr(NpyDType d);  // "<f4", "<f2", "<i4", "<i8", "<u4"
size_t npy_dtype_size(NpyDType d);
bool npy_is_integer(NpyDType d);

struct NpyArray {
  NpyDType dtype = NpyDType::F32;
  std::vector<int64_t> shape;  // () for a scalar
  std::vector<uint8_t> bytes;  // little-endian, C order
  std::string where;           // the file, for errors
  int64_t numel() const;
  // The values as f32 (f16 converted, round trip exact); an integer array is an ember::Error.
  std::vector<float> to_f32() const;
  // The values of an integer array; a float array is an ember::Error.
  std::vector<int64_t> to_i64() const;
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
// A .npy output named by `option`: an existing file or directory there is never replaced
// (output_guard.h); check_output() it before the work, write_output_file() it after.
OutputTarget npy_output(const std::filesystem::path& path, const std::string& option);

void write_npy_f32(const std::filesystem::path& path, std::span<const int64_t> shape, std::span<const float> values);
// f32 values rounded to f16 (nearest even) and written as '<f2'.
void write_npy_f16(const std::filesystem::path& path, std::span<const int64_t> shape, std::span<const float> values);

// Writes an array [rows, row_shape...] block by block; the leading dimension is the number of
// rows appended. The header is written at finish() into room reserved for any row count, so
// the data still starts on a 64-byte boundary. The file appears only at finish().
class NpyRowWriter {
 public:
  NpyRowWriter(const std::filesystem::path& path, NpyDType dtype, std::vector<int64_t> row_shape);
  ~NpyRowWriter();
  void append(std::span<const uint8_t> rows);  // whole rows
  void append_f32(std::span<const float> rows);
  int64_t rows() const { return rows_; }
  void finish();

 private:
  std::unique_ptr<AtomicFileWriter> file_;
  std::filesystem::path path_;
  NpyDType dtype_;
  std::vector<int64_t> row_shape_;
  uint64_t row_bytes_ = 0, header_bytes_ = 0;
  int64_t rows_ = 0;
};

}  // namespace ember::formats
