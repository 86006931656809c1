// safetensors: the checkpoint format of Hugging Face and TRELLIS. Reader (memory-mapped, header
// and offsets validated) and writer (atomic).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/output_guard.h"

namespace ember::formats {

enum class DType { F32, F16, BF16, I8, U8, I32, I64 };
const char* dtype_name(DType d);  // "F32", ...
size_t dtype_size(DType d);

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range inside the data section
  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps the file and validates the header: JSON well-formed (errors give line/column), every
  // offset inside the file, byte counts equal to shape x dtype size, no overlaps.
  static SafetensorsFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  const TensorInfo& info(const std::string& name) const;  // Error naming the file if missing
  std::span<const uint8_t> bytes(const std::string& name) const;
  // The tensor converted to f32 (from F32, F16 or BF16).
  std::vector<float> to_f32(const std::string& name) const;

 private:
  std::filesystem::path path_;
  std::shared_ptr<const void> mapping_;  // munmap on last release
  const uint8_t* data_ = nullptr;        // start of the data section
  uint64_t data_size_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (in name order, 8-byte aligned header as the format asks) atomically.
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
// f32 values as a tensor to write, stored as F16 (rounded to nearest) or F32; `values` is
// released as it is encoded, so large checkpoints are not held twice.
TensorToWrite float_tensor(std::string name, std::vector<int64_t> shape, std::vector<float>& values, bool f16);
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The metadata key that marks a file as ember's output of a kind ("ember_output": id), so that
// --force may replace it (output_guard.h).
inline constexpr const char* kEmberOutputKey = "ember_output";
// A .safetensors file output whose previous versions carry `"ember_output": id` in their metadata.
OutputKind safetensors_output(const std::string& id, const std::string& name);
// True when the file is a readable safetensors file whose metadata says ember wrote it as `id`.
bool is_ember_safetensors(const std::filesystem::path& path, const std::string& id);

// f16/bf16 <-> f32 conversions used across formats (round to nearest even).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);

}  // namespace ember::formats
