#include "formats/npy.h"

#include <cstring>
#include <optional>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/safetensors.h"

namespace ember::formats {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kAlign = 64;  // numpy pads headers so the data is 64-byte aligned

const char* kFix = "ember reads .npy files numpy writes with np.save for float32/float16 C-order arrays";

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string text, std::string where) : s_(std::move(text)), where_(std::move(where)) {}

  void parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      std::string key = string_literal();
      expect(':');
      skip_ws();
      if (key == "descr") {
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        pos_++;
        continue;
      }
      if (peek() == '}') break;
      fail("expected ',' or '}'");
    }
    if (!have_descr || !have_fortran || !have_shape)
      fail("header lacks one of 'descr', 'fortran_order', 'shape'");
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) pos_++;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("malformed .npy header: " + why + " at header character " + std::to_string(pos_) + " in \"" + s_ + "\"",
                where_, kFix);
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    pos_++;
  }
  std::string string_literal() {
    skip_ws();
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (true) {
      skip_ws();
      if (peek() == ')') {
        pos_++;
        return dims;
      }
      if (peek() < '0' || peek() > '9') fail("expected a dimension");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        v = v * 10 + (peek() - '0');
        if (v > (int64_t{1} << 50)) fail("dimension too large");
        pos_++;
      }
      dims.push_back(v);
      skip_ws();
      if (peek() == ',') {
        pos_++;
      } else if (peek() != ')') {
        fail("expected ',' or ')'");
      }
    }
  }

  std::string s_;
  std::string where_;
  size_t pos_ = 0;
};

std::string shape_text(std::span<const int64_t> shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); i++) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

int64_t numel_of(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

const char* npy_descr(NpyDType d) { return d == NpyDType::F32 ? "<f4" : "<f2"; }
size_t npy_dtype_size(NpyDType d) { return d == NpyDType::F32 ? 4 : 2; }

int64_t NpyArray::numel() const { return numel_of(shape); }

std::vector<float> NpyArray::to_f32() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  if (dtype == NpyDType::F32) {
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
  } else {
    for (size_t i = 0; i < out.size(); i++) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      out[i] = f16_to_f32(h);
    }
  }
  return out;
}

NpyArray parse_npy(std::span<const uint8_t> file, const std::string& where) {
  if (file.size() < kMagicSize + 4 || std::memcmp(file.data(), kMagic, kMagicSize) != 0)
    throw Error("not a .npy file (the magic \\x93NUMPY is missing at byte 0)", where, kFix);
  uint8_t major = file[6], minor = file[7];
  size_t header_len = 0, prefix = 0;
  if (major == 1 && minor == 0) {
    header_len = file[8] | (size_t{file[9]} << 8);
    prefix = 10;
  } else if (major == 2 && minor == 0) {
    if (file.size() < 12) throw Error("truncated .npy header", where, kFix);
    header_len = file[8] | (size_t{file[9]} << 8) | (size_t{file[10]} << 16) | (size_t{file[11]} << 24);
    prefix = 12;
  } else {
    throw Error("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                    " (byte 6)", where, "ember reads versions 1.0 and 2.0; save with np.save");
  }
  if (file.size() < prefix + header_len)
    throw Error("truncated .npy header: it declares " + std::to_string(header_len) + " bytes, the file has " +
                    std::to_string(file.size() - prefix) + " after the prefix", where, kFix);
  std::string header(reinterpret_cast<const char*>(file.data() + prefix), header_len);
  std::string descr;
  bool fortran = false;
  NpyArray arr;
  HeaderParser(header, where).parse(descr, fortran, arr.shape);
  if (descr == "<f4") {
    arr.dtype = NpyDType::F32;
  } else if (descr == "<f2") {
    arr.dtype = NpyDType::F16;
  } else {
    throw Error("unsupported .npy dtype '" + descr + "'", where,
                "convert it first, e.g. np.save(path, a.astype('<f4'))");
  }
  if (fortran)
    throw Error("Fortran-order .npy arrays are not supported", where, "save np.ascontiguousarray(a) instead");
  uint64_t expected = static_cast<uint64_t>(arr.numel()) * npy_dtype_size(arr.dtype);
  uint64_t found = file.size() - prefix - header_len;
  if (found != expected)
    throw Error(std::string(found < expected ? "truncated" : "oversized") + " .npy data: shape " +
                    shape_text(arr.shape) + " of " + descr + " needs " + std::to_string(expected) +
                    " bytes after the header (byte " + std::to_string(prefix + header_len) + "), found " +
                    std::to_string(found),
                where, "the file is incomplete or not what its header says; write it again");
  arr.bytes.assign(file.begin() + static_cast<std::ptrdiff_t>(prefix + header_len), file.end());
  return arr;
}

NpyArray read_npy(const std::filesystem::path& path) {
  std::string text = read_file(path);
  return parse_npy(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()),
                   path.string());
}

std::vector<uint8_t> npy_header(NpyDType dtype, std::span<const int64_t> shape) {
  std::string dict = std::string("{'descr': '") + npy_descr(dtype) + "', 'fortran_order': False, 'shape': " +
                     shape_text(shape) + ", }";
  // magic(6) + version(2) + length(2) + dict + spaces + '\n' is a multiple of kAlign.
  size_t total = kMagicSize + 4 + dict.size() + 1;
  size_t padded = (total + kAlign - 1) / kAlign * kAlign;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  if (dict.size() > 0xffff) throw Error("array has too many dimensions for a .npy 1.0 header", "write_npy");
  std::vector<uint8_t> out(kMagic, kMagic + kMagicSize);
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<uint8_t>(dict.size() & 0xff));
  out.push_back(static_cast<uint8_t>(dict.size() >> 8));
  out.insert(out.end(), dict.begin(), dict.end());
  return out;
}

void write_npy(const std::filesystem::path& path, NpyDType dtype, std::span<const int64_t> shape,
               std::span<const uint8_t> bytes) {
  for (int64_t d : shape)
    if (d < 0) throw Error("negative dimension in shape " + shape_text(shape), path.string());
  uint64_t expected = static_cast<uint64_t>(numel_of(shape)) * npy_dtype_size(dtype);
  if (bytes.size() != expected)
    throw Error("array data is " + std::to_string(bytes.size()) + " bytes, shape " + shape_text(shape) + " needs " +
                    std::to_string(expected), path.string());
  std::vector<uint8_t> out = npy_header(dtype, shape);
  out.insert(out.end(), bytes.begin(), bytes.end());
  write_file_atomic(path, out);
}

void write_npy_f32(const std::filesystem::path& path, std::span<const int64_t> shape, std::span<const float> values) {
  write_npy(path, NpyDType::F32, shape,
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4));
}

void write_npy_f16(const std::filesystem::path& path, std::span<const int64_t> shape, std::span<const float> values) {
  std::vector<uint16_t> h(values.size());
  for (size_t i = 0; i < values.size(); i++) h[i] = f32_to_f16(values[i]);
  write_npy(path, NpyDType::F16, shape,
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(h.data()), h.size() * 2));
}

}  // namespace ember::formats
