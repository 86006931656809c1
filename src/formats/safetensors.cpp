#include "formats/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/json_text.h"

namespace ember::formats {
namespace {

constexpr uint64_t kMaxHeader = 100ull << 20;  // the format's own cap on header size

DType parse_dtype(const std::string& s, const std::string& where) {
  if (s == "F32") return DType::F32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  if (s == "I8") return DType::I8;
  if (s == "U8") return DType::U8;
  if (s == "I32") return DType::I32;
  if (s == "I64") return DType::I64;
  throw Error("unsupported dtype '" + s + "'", where, "ember reads F32, F16, BF16, I8, U8, I32 and I64 tensors");
}

}  // namespace

const char* dtype_name(DType d) {
  switch (d) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I8: return "I8";
    case DType::U8: return "U8";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
  }
  return "?";
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::I8: case DType::U8: return 1;
    case DType::I64: return 8;
  }
  return 0;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  SafetensorsFile f;
  f.path_ = path;
  const std::string where = path.string();
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error("cannot open safetensors file", where, "check the path");
  struct stat st {};
  fstat(fd, &st);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    throw Error("file is " + std::to_string(size) + " bytes, too short for a safetensors header", where, "the file is truncated");
  }
  void* map = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  ::close(fd);
  if (map == MAP_FAILED) throw Error("cannot memory-map the file", where);
  f.mapping_ = std::shared_ptr<const void>(map, [size](const void* p) { munmap(const_cast<void*>(p), size); });
  const auto* bytes = static_cast<const uint8_t*>(map);

  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes, 8);
  if (header_len > kMaxHeader || 8 + header_len > size)
    throw Error("header length " + std::to_string(header_len) + " does not fit in the file of " + std::to_string(size) + " bytes",
                where + " (byte 0)", "the file is truncated or not safetensors");
  std::string header(reinterpret_cast<const char*>(bytes + 8), header_len);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(std::string("malformed JSON header: ") + e.what(), where + " header, " + json_line_column(header, e.byte ? e.byte - 1 : 0));
  }
  if (!j.is_object()) throw Error("header is not a JSON object", where);
  f.data_ = bytes + 8 + header_len;
  f.data_size_ = size - 8 - header_len;

  for (auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (v.is_object())
        for (auto& [k, val] : v.items()) f.metadata_[k] = val.is_string() ? val.get<std::string>() : val.dump();
      continue;
    }
    const std::string tw = where + ": tensor '" + name + "'";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      throw Error("entry lacks dtype, shape or data_offsets", tw);
    TensorInfo t;
    t.name = name;
    t.dtype = parse_dtype(v["dtype"].get<std::string>(), tw);
    for (auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) throw Error("shape has a non-integer or negative dimension", tw);
      t.shape.push_back(d.get<int64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2) throw Error("data_offsets is not [begin, end]", tw);
    t.begin = off[0].get<uint64_t>();
    t.end = off[1].get<uint64_t>();
    if (t.end < t.begin || t.end > f.data_size_)
      throw Error("data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ") are outside the data section of " +
                      std::to_string(f.data_size_) + " bytes",
                  tw, "the file is truncated or its header lies about sizes");
    uint64_t expect = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype);
    if (t.end - t.begin != expect)
      throw Error("holds " + std::to_string(t.end - t.begin) + " bytes but shape x dtype needs " + std::to_string(expect), tw,
                  "the header lies about sizes");
    f.tensors_[name] = std::move(t);
  }
  // No two tensors may share bytes.
  std::vector<const TensorInfo*> order;
  for (auto& [n, t] : f.tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < order.size(); i++)
    if (order[i]->begin < order[i - 1]->end && order[i]->end > order[i]->begin)
      throw Error("tensors '" + order[i - 1]->name + "' and '" + order[i]->name + "' overlap", where);
  return f;
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error("tensor '" + name + "' is missing", path_.string(), "the checkpoint is incomplete or of another model");
  return it->second;
}

std::span<const uint8_t> SafetensorsFile::bytes(const std::string& name) const {
  const TensorInfo& t = info(name);
  return {data_ + t.begin, t.end - t.begin};
}

std::vector<float> SafetensorsFile::to_f32(const std::string& name) const {
  const TensorInfo& t = info(name);
  auto b = bytes(name);
  std::vector<float> out(static_cast<size_t>(t.numel()));
  switch (t.dtype) {
    case DType::F32: std::memcpy(out.data(), b.data(), b.size()); break;
    case DType::F16:
    case DType::BF16:
      for (size_t i = 0; i < out.size(); i++) {
        uint16_t h;
        std::memcpy(&h, b.data() + 2 * i, 2);
        out[i] = t.dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    default:
      throw Error(std::string("tensor has dtype ") + dtype_name(t.dtype) + ", expected a float type", path_.string() + ": tensor '" + name + "'");
  }
  return out;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<const TensorToWrite*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->name < b->name; });
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto* t : order) {
    int64_t n = 1;
    for (int64_t d : t->shape) n *= d;
    if (static_cast<uint64_t>(n) * dtype_size(t->dtype) != t->bytes.size())
      throw Error("tensor bytes do not match its shape and dtype", "writing " + path.string() + ": tensor '" + t->name + "'");
    header[t->name] = {{"dtype", dtype_name(t->dtype)}, {"shape", t->shape}, {"data_offsets", {offset, offset + t->bytes.size()}}};
    offset += t->bytes.size();
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8) h += ' ';  // data section starts 8-byte aligned
  std::vector<uint8_t> out(8 + h.size() + offset);
  uint64_t hl = h.size();
  std::memcpy(out.data(), &hl, 8);
  std::memcpy(out.data() + 8, h.data(), h.size());
  uint8_t* p = out.data() + 8 + h.size();
  for (const auto* t : order) {
    std::memcpy(p, t->bytes.data(), t->bytes.size());
    p += t->bytes.size();
  }
  write_file_atomic(path, out);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) {
        mant <<= 1;
        exp--;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TensorToWrite float_tensor(std::string name, std::vector<int64_t> shape, std::vector<float>& values, bool f16) {
  TensorToWrite t{std::move(name), f16 ? DType::F16 : DType::F32, std::move(shape), {}};
  if (f16) {
    t.bytes.resize(values.size() * 2);
    for (size_t i = 0; i < values.size(); i++) {
      uint16_t h = f32_to_f16(values[i]);
      std::memcpy(t.bytes.data() + 2 * i, &h, 2);
    }
  } else {
    t.bytes.resize(values.size() * 4);
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  }
  std::vector<float>().swap(values);
  return t;
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf/nan
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);                                         // overflow
  if (exp <= 0) {                                                                                       // subnormal or zero
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

bool is_ember_safetensors(const std::filesystem::path& path, const std::string& id) {
  try {
    const auto f = SafetensorsFile::open(path);
    auto it = f.metadata().find(kEmberOutputKey);
    return it != f.metadata().end() && it->second == id;
  } catch (const std::exception&) {
    return false;
  }
}

OutputKind safetensors_output(const std::string& id, const std::string& name) {
  return {name, false, [id](const std::filesystem::path& p) { return is_ember_safetensors(p, id); }};
}

}  // namespace ember::formats
