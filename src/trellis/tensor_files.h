// The ss-flow stage's host tensors from a user's .npy files (formats/npy.h reads them): f32 or
// f16, every value finite, the shape the stage needs. Errors name the option the file came from.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ember::trellis {

struct FloatArray {
  std::vector<int64_t> shape;
  std::vector<float> values;  // f16 files widened to f32
};

// Any shape; throws ember::Error for a missing or malformed file, a dtype other than f32/f16, or a
// NaN/Inf (naming the element). `what` is the option ("--cond").
FloatArray read_finite_npy(const std::filesystem::path& path, const std::string& what);

// A batch of items of shape `item`: [B, item...] with B >= 1, or `item` alone (B = 1). Returns the
// values, B in `batch`.
std::vector<float> read_batch(const std::filesystem::path& path, const std::vector<int64_t>& item, const std::string& what,
                              int64_t& batch);
// "(2, 8, 16, 16, 16)", as numpy prints shapes.
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace ember::trellis
