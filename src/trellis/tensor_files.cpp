#include "trellis/tensor_files.h"

#include <cmath>

#include "common/error.h"
#include "formats/npy.h"

namespace ember::trellis {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

FloatArray read_finite_npy(const std::filesystem::path& path, const std::string& what) {
  if (!std::filesystem::exists(path))
    throw Error("file not found", what + " " + path.string(), "give the path of a .npy file (numpy.save)");
  formats::NpyArray a = formats::read_npy(path);
  FloatArray out{a.shape, a.to_f32()};
  for (size_t i = 0; i < out.values.size(); i++)
    if (!std::isfinite(out.values[i]))
      throw Error("non-finite value (" + std::to_string(out.values[i]) + ") at element " + std::to_string(i),
                  what + " " + path.string(), "the tensor is corrupt or came from a failed run");
  return out;
}

namespace {

std::vector<float> with_shape(const std::filesystem::path& path, const std::vector<int64_t>& want, const std::string& what) {
  FloatArray a = read_finite_npy(path, what);
  std::vector<int64_t> with_batch = want;
  with_batch.insert(with_batch.begin(), 1);
  if (a.shape != want && a.shape != with_batch)
    throw Error("shape " + shape_text(a.shape) + " where " + shape_text(want) + " was expected", what + " " + path.string(),
                "the stage needs " + shape_text(want) + " (or with a leading 1)");
  return std::move(a.values);
}

}  // namespace

std::vector<float> read_context(const std::filesystem::path& path, int64_t tokens, int64_t channels, const std::string& what) {
  return with_shape(path, {tokens, channels}, what);
}

std::vector<float> read_latent(const std::filesystem::path& path, int64_t channels, int64_t r, const std::string& what) {
  return with_shape(path, {channels, r, r, r}, what);
}

}  // namespace ember::trellis
