#include "trellis/tensor_files.h"

#include <cmath>
#include <cstring>
#include <regex>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/safetensors.h"

namespace ember::trellis {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

NpyArray read_npy(const std::filesystem::path& path) {
  const std::string where = path.string();
  const std::string bytes = read_file(path);
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    throw Error("not a .npy file (no \\x93NUMPY magic)", where, "save the tensor with numpy.save");
  const int major = uint8_t(bytes[6]);
  size_t header_len, start;
  if (major == 1) {
    header_len = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error("truncated .npy header", where);
    header_len = 0;
    for (int i = 0; i < 4; i++) header_len |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    start = 12;
  } else {
    throw Error(".npy version " + std::to_string(major) + " is not supported", where);
  }
  if (start + header_len > bytes.size()) throw Error("truncated .npy header", where);
  const std::string header = bytes.substr(start, header_len);
  std::smatch m;
  NpyArray a;
  if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'"))) throw Error("no 'descr' in the .npy header", where);
  a.descr = m[1];
  if (std::regex_search(header, m, std::regex("'fortran_order'\\s*:\\s*True")))
    throw Error("Fortran-ordered arrays are not supported", where, "save a C-contiguous array (numpy.ascontiguousarray)");
  if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)"))) throw Error("no 'shape' in the .npy header", where);
  const std::string dims = m[1];
  const std::regex number("\\d+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it)
    a.shape.push_back(std::stoll(it->str()));
  size_t count = 1;
  for (int64_t d : a.shape) count *= size_t(d);
  size_t elem;
  if (a.descr == "<f4") {
    elem = 4;
  } else if (a.descr == "<f2") {
    elem = 2;
  } else {
    throw Error("dtype '" + a.descr + "' is not supported", where, "give float32 or float16 (little-endian)");
  }
  const size_t data = start + header_len;
  if (bytes.size() - data != count * elem)
    throw Error("data holds " + std::to_string(bytes.size() - data) + " bytes, shape " + shape_str(a.shape) + " needs " +
                    std::to_string(count * elem),
                where, "the file is truncated or its header is wrong");
  a.values.resize(count);
  for (size_t i = 0; i < count; i++) {
    if (elem == 4) {
      std::memcpy(&a.values[i], bytes.data() + data + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, bytes.data() + data + 2 * i, 2);
      a.values[i] = formats::f16_to_f32(h);
    }
  }
  return a;
}

void write_npy(const std::filesystem::path& path, const std::vector<int64_t>& shape, const std::vector<float>& values) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_str(shape) + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  write_file_atomic(path, out);
}

namespace {

std::vector<float> checked(const std::filesystem::path& path, const std::vector<int64_t>& want, const std::string& what) {
  NpyArray a = read_npy(path);
  std::vector<int64_t> with_batch = want;
  with_batch.insert(with_batch.begin(), 1);
  if (a.shape != want && a.shape != with_batch)
    throw Error("shape " + shape_str(a.shape) + " where " + shape_str(want) + " was expected", what + " " + path.string(),
                "the stage needs " + shape_str(want) + " (or with a leading 1)");
  for (size_t i = 0; i < a.values.size(); i++)
    if (!std::isfinite(a.values[i]))
      throw Error("non-finite value (" + std::to_string(a.values[i]) + ") at element " + std::to_string(i), what + " " + path.string(),
                  "the tensor is corrupt or came from a failed run");
  return std::move(a.values);
}

}  // namespace

std::vector<float> read_context(const std::filesystem::path& path, int64_t tokens, int64_t channels, const std::string& what) {
  return checked(path, {tokens, channels}, what);
}

std::vector<float> read_latent(const std::filesystem::path& path, int64_t channels, int64_t r, const std::string& what) {
  return checked(path, {channels, r, r, r}, what);
}

}  // namespace ember::trellis
