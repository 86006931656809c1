#include "trellis/tensor_files.h"

#include <algorithm>
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

std::vector<float> read_batch(const std::filesystem::path& path, const std::vector<int64_t>& item, const std::string& what,
                              int64_t& batch) {
  FloatArray a = read_finite_npy(path, what);
  if (a.shape == item) {
    batch = 1;
  } else if (a.shape.size() == item.size() + 1 && std::equal(item.begin(), item.end(), a.shape.begin() + 1) && a.shape[0] >= 1) {
    batch = a.shape[0];
  } else {
    std::vector<int64_t> batched = item;
    batched.insert(batched.begin(), 2);
    throw Error("shape " + shape_text(a.shape) + " is neither " + shape_text(item) + " nor a batch of them", what + " " + path.string(),
                "give " + shape_text(item) + ", or [B, ...] for B of them, e.g. " + shape_text(batched));
  }
  return std::move(a.values);
}

}  // namespace ember::trellis
