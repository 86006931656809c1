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

const char* kFix = "ember reads .npy files numpy writes with np.save for float32/float16 and int32/int64/uint32 C-order arrays";

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

// The version-1.0 header padded to at least `min_size` bytes (a multiple of kAlign).
std::vector<uint8_t> padded_header(NpyDType dtype, std::span<const int64_t> shape, size_t min_size) {
  std::string dict = std::string("{'descr': '") + npy_descr(dtype) + "', 'fortran_order': False, 'shape': " +
                     shape_text(shape) + ", }";
  // magic(6) + version(2) + length(2) + dict + spaces + '\n' is a multiple of kAlign.
  size_t total = kMagicSize + 4 + dict.size() + 1;
  size_t padded = std::max((total + kAlign - 1) / kAlign * kAlign, min_size);
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

}  // namespace

const char* npy_descr(NpyDType d) {
  switch (d) {
    case NpyDType::F32: return "<f4";
    case NpyDType::F16: return "<f2";
    case NpyDType::I32: return "<i4";
    case NpyDType::I64: return "<i8";
    case NpyDType::U32: return "<u4";
  }
  return "?";
}

size_t npy_dtype_size(NpyDType d) {
  switch (d) {
    case NpyDType::F16: return 2;
    case NpyDType::I64: return 8;
    default: return 4;
  }
}

bool npy_is_integer(NpyDType d) { return d == NpyDType::I32 || d == NpyDType::I64 || d == NpyDType::U32; }

int64_t NpyArray::numel() const { return numel_of(shape); }

std::vector<float> NpyArray::to_f32() const {
  if (npy_is_integer(dtype))
    throw Error(std::string("the array holds integers (") + npy_descr(dtype) + "), floats are expected", where,
                "save it as float32, e.g. np.save(path, a.astype('<f4'))");
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

std::vector<int64_t> NpyArray::to_i64() const {
  if (!npy_is_integer(dtype))
    throw Error(std::string("the array holds floats (") + npy_descr(dtype) + "), integers are expected", where,
                "save it as integers, e.g. np.save(path, a.astype('<i4'))");
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  for (size_t i = 0; i < out.size(); i++) {
    if (dtype == NpyDType::I64) {
      std::memcpy(&out[i], bytes.data() + 8 * i, 8);
    } else if (dtype == NpyDType::I32) {
      int32_t v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      out[i] = v;
    } else {
      uint32_t v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      out[i] = v;
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
  arr.where = where;
  HeaderParser(header, where).parse(descr, fortran, arr.shape);
  bool known = false;
  for (NpyDType d : {NpyDType::F32, NpyDType::F16, NpyDType::I32, NpyDType::I64, NpyDType::U32})
    if (descr == npy_descr(d)) {
      arr.dtype = d;
      known = true;
    }
  if (!known)
    throw Error("unsupported .npy dtype '" + descr + "'", where,
                "ember reads <f4, <f2, <i4, <i8 and <u4; convert it first, e.g. np.save(path, a.astype('<f4'))");
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

std::vector<uint8_t> npy_header(NpyDType dtype, std::span<const int64_t> shape) { return padded_header(dtype, shape, 0); }

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

NpyRowWriter::NpyRowWriter(const std::filesystem::path& path, NpyDType dtype, std::vector<int64_t> row_shape)
    : path_(path), dtype_(dtype), row_shape_(std::move(row_shape)) {
  row_bytes_ = npy_dtype_size(dtype_);
  for (int64_t d : row_shape_) {
    if (d < 0) throw Error("negative dimension in row shape " + shape_text(row_shape_), path.string());
    row_bytes_ *= static_cast<uint64_t>(d);
  }
  // Room for the header of the largest row count a shape tuple can hold (16 digits).
  std::vector<int64_t> widest{int64_t{1} << 50};
  widest.insert(widest.end(), row_shape_.begin(), row_shape_.end());
  std::vector<uint8_t> placeholder = padded_header(dtype_, widest, 0);
  header_bytes_ = placeholder.size();
  file_ = std::make_unique<AtomicFileWriter>(path);
  file_->write(placeholder);
}

NpyRowWriter::~NpyRowWriter() = default;

void NpyRowWriter::append(std::span<const uint8_t> rows) {
  if (!file_) throw Error("internal: append after finish", path_.string());
  if (row_bytes_ == 0 || rows.size() % row_bytes_ != 0)
    throw Error("internal: " + std::to_string(rows.size()) + " bytes are not whole rows of " + std::to_string(row_bytes_), path_.string());
  file_->write(rows);
  rows_ += static_cast<int64_t>(rows.size() / row_bytes_);
}

void NpyRowWriter::append_f32(std::span<const float> rows) {
  if (dtype_ != NpyDType::F32) throw Error("internal: f32 rows for a non-f32 array", path_.string());
  append(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(rows.data()), rows.size() * 4));
}

void NpyRowWriter::finish() {
  if (!file_) throw Error("internal: finish twice", path_.string());
  std::vector<int64_t> shape{rows_};
  shape.insert(shape.end(), row_shape_.begin(), row_shape_.end());
  file_->write_at(0, padded_header(dtype_, shape, header_bytes_));
  file_->commit();
  file_.reset();
}

OutputTarget npy_output(const std::filesystem::path& path, const std::string& option) {
  OutputTarget t(path, option);
  t.kind = {".npy file", false, {}};
  return t;
}

}  // namespace ember::formats
