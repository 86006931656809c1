#include "formats/trellis_pack.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/safetensors.h"
#include "formats/sha256.h"

namespace ember::formats {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string line_col(const std::string& text, size_t pos) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < text.size(); i++) {
    if (text[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Reads fields of one JSON object, recording a problem for each missing or mistyped one.
class Fields {
 public:
  Fields(const std::string& file, std::vector<PackProblem>& problems) : file_(file), problems_(problems) {}

  const json* object(const json& parent, const char* key, const std::string& field) {
    if (!parent.contains(key)) return missing(field, "an object");
    if (!parent[key].is_object()) return mistyped(field, "an object", parent[key]);
    return &parent[key];
  }
  std::optional<std::string> str(const json& obj, const char* key, const std::string& field) {
    if (!obj.contains(key)) return missing(field, "a string"), std::nullopt;
    if (!obj[key].is_string()) return mistyped(field, "a string", obj[key]), std::nullopt;
    return obj[key].get<std::string>();
  }
  std::optional<uint64_t> uint(const json& obj, const char* key, const std::string& field) {
    if (!obj.contains(key)) return missing(field, "a non-negative integer"), std::nullopt;
    if (!obj[key].is_number_unsigned()) return mistyped(field, "a non-negative integer", obj[key]), std::nullopt;
    return obj[key].get<uint64_t>();
  }
  std::optional<StageTensorRef> ref(const json& obj, const char* key, const std::string& field) {
    const json* r = object(obj, key, field);
    if (!r) return std::nullopt;
    auto shard = uint(*r, "shard", field + ".shard");
    auto offset = uint(*r, "offset", field + ".offset");
    auto bytes = uint(*r, "bytes", field + ".bytes");
    if (!shard || !offset || !bytes) return std::nullopt;
    return StageTensorRef{static_cast<uint32_t>(*shard), *offset, *bytes};
  }

 private:
  const json* missing(const std::string& field, const char* what) {
    problems_.push_back({file_, field, std::nullopt, "missing field", what, "nothing"});
    return nullptr;
  }
  const json* mistyped(const std::string& field, const char* what, const json& v) {
    problems_.push_back({file_, field, std::nullopt, "wrong type", what, v.dump()});
    return nullptr;
  }
  const std::string& file_;
  std::vector<PackProblem>& problems_;
};

StageTensor parse_tensor(const std::string& name, const json& v, Fields& f, const std::string& file,
                         std::vector<PackProblem>& problems) {
  StageTensor t;
  t.name = name;
  const std::string base = "tensors." + name;
  if (!v.is_object()) {
    problems.push_back({file, base, std::nullopt, "wrong type", "an object", v.dump()});
    return t;
  }
  if (!v.contains("shape") || !v["shape"].is_array()) {
    problems.push_back({file, base + ".shape", std::nullopt, "missing or not an array", "a list of dimensions",
                        v.contains("shape") ? v["shape"].dump() : "nothing"});
  } else {
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) {
        problems.push_back({file, base + ".shape", std::nullopt, "bad dimension", "non-negative integers", v["shape"].dump()});
        break;
      }
      t.shape.push_back(d.get<int64_t>());
    }
  }
  t.encoding = f.str(v, "encoding", base + ".encoding").value_or("");
  if (auto d = f.ref(v, "data", base + ".data")) t.data = *d;
  if (t.encoding == "raw") {
    t.dtype = f.str(v, "dtype", base + ".dtype").value_or("");
  } else if (t.encoding == "symmetric-quantized") {
    t.bits = static_cast<uint32_t>(f.uint(v, "bits", base + ".bits").value_or(0));
    t.group_size = static_cast<uint32_t>(f.uint(v, "group_size", base + ".group_size").value_or(0));
    t.output_tile = static_cast<uint32_t>(f.uint(v, "output_tile", base + ".output_tile").value_or(0));
    t.rows = static_cast<int64_t>(f.uint(v, "rows", base + ".rows").value_or(0));
    t.columns = static_cast<int64_t>(f.uint(v, "columns", base + ".columns").value_or(0));
    t.padded_rows = static_cast<int64_t>(f.uint(v, "padded_rows", base + ".padded_rows").value_or(0));
    t.padded_columns = static_cast<int64_t>(f.uint(v, "padded_columns", base + ".padded_columns").value_or(0));
    t.scales = f.ref(v, "scales", base + ".scales");
  } else if (v.contains("encoding") && v["encoding"].is_string()) {
    problems.push_back({file, base + ".encoding", std::nullopt, "unknown encoding", "\"raw\" or \"symmetric-quantized\"",
                        "\"" + t.encoding + "\""});
  }
  return t;
}

uint64_t round_up(uint64_t v, uint64_t m) { return m ? (v + m - 1) / m * m : v; }

// Checks one byte range of a tensor against its shard; records it for the overlap check.
struct Range {
  uint64_t begin, end;
  std::string label;
};

void check_ref(const StageManifest& m, const StageTensorRef& r, const std::string& field, const std::string& file,
               std::vector<PackProblem>& problems, std::vector<std::vector<Range>>& by_shard) {
  if (r.shard >= m.shards.size()) {
    problems.push_back({file, field + ".shard", std::nullopt, "shard index out of range",
                        "< " + std::to_string(m.shards.size()), std::to_string(r.shard)});
    return;
  }
  const ShardInfo& s = m.shards[r.shard];
  if (r.offset % kStagePackAlignment)
    problems.push_back({s.file, field + ".offset", r.offset, "offset not 256-aligned", "a multiple of 256",
                        std::to_string(r.offset)});
  if (r.offset > s.bytes || r.bytes > s.bytes - r.offset)
    problems.push_back({s.file, field, r.offset, "range extends past the end of its shard",
                        "end <= " + std::to_string(s.bytes) + " (shard size)",
                        "end " + std::to_string(r.offset + r.bytes)});
  by_shard[r.shard].push_back({r.offset, r.offset + r.bytes, field});
}

void check_tensor(const StageManifest& m, const StageTensor& t, const std::string& file,
                  std::vector<PackProblem>& problems, std::vector<std::vector<Range>>& by_shard) {
  const std::string base = "tensors." + t.name;
  auto bad = [&](const std::string& field, const std::string& what, const std::string& expected, const std::string& found,
                 std::optional<uint64_t> offset = std::nullopt) {
    problems.push_back({file, base + field, offset, what, expected, found});
  };
  const int64_t numel = t.numel();
  if (t.encoding == "raw") {
    if (t.dtype != "f16") bad(".dtype", "unsupported raw dtype", "\"f16\"", "\"" + t.dtype + "\"");
    if (t.data.bytes != static_cast<uint64_t>(numel) * 2)
      bad(".data.bytes", "byte count disagrees with shape " + shape_text(t.shape) + " of f16",
          std::to_string(numel * 2), std::to_string(t.data.bytes), t.data.offset);
  } else if (t.encoding == "symmetric-quantized") {
    if (t.bits != 8) bad(".bits", "unsupported bit width", "8", std::to_string(t.bits));
    if (t.group_size == 0) bad(".group_size", "group size must be positive", "> 0", "0");
    if (t.output_tile == 0) bad(".output_tile", "output tile must be positive", "> 0", "0");
    if (t.shape.empty()) {
      bad(".shape", "a quantized tensor needs at least one dimension", "[rows, ...]", "[]");
    } else {
      int64_t cols = numel / std::max<int64_t>(t.shape[0], 1);
      if (t.rows != t.shape[0]) bad(".rows", "rows disagree with shape " + shape_text(t.shape), std::to_string(t.shape[0]), std::to_string(t.rows));
      if (t.columns != cols) bad(".columns", "columns disagree with shape " + shape_text(t.shape), std::to_string(cols), std::to_string(t.columns));
    }
    if (t.group_size && t.output_tile) {
      int64_t pr = static_cast<int64_t>(round_up(static_cast<uint64_t>(t.rows), t.output_tile));
      int64_t pc = static_cast<int64_t>(round_up(static_cast<uint64_t>(t.columns), t.group_size));
      if (t.padded_rows != pr) bad(".padded_rows", "rows must pad to a multiple of output_tile", std::to_string(pr), std::to_string(t.padded_rows));
      if (t.padded_columns != pc) bad(".padded_columns", "columns must pad to a multiple of group_size", std::to_string(pc), std::to_string(t.padded_columns));
      uint64_t want_data = static_cast<uint64_t>(pr * pc), want_scales = static_cast<uint64_t>(pr * (pc / t.group_size)) * 2;
      if (t.data.bytes != want_data)
        bad(".data.bytes", "byte count disagrees with padded shape " + std::to_string(pr) + "x" + std::to_string(pc) + " of int8",
            std::to_string(want_data), std::to_string(t.data.bytes), t.data.offset);
      if (t.scales && t.scales->bytes != want_scales)
        bad(".scales.bytes", "byte count disagrees with " + std::to_string(pr) + " rows x " + std::to_string(pc / t.group_size) +
            " groups of f16", std::to_string(want_scales), std::to_string(t.scales->bytes), t.scales->offset);
    }
    if (!t.scales) {
      // parse_stage_manifest already reported the missing field.
    } else if (t.scales->shard != t.data.shard) {
      bad(".scales.shard", "tensor straddles shards (data and scales must share one)", std::to_string(t.data.shard),
          std::to_string(t.scales->shard));
    }
  } else {
    return;  // unknown encoding: reported while parsing; its byte counts mean nothing
  }
  check_ref(m, t.data, base + ".data", file, problems, by_shard);
  if (t.scales) check_ref(m, *t.scales, base + ".scales", file, problems, by_shard);
}

std::shared_ptr<const uint8_t> map_file(const fs::path& path, uint64_t size) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return nullptr;
  void* p = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  ::close(fd);
  if (p == MAP_FAILED) return nullptr;
  if (!p) return std::shared_ptr<const uint8_t>(reinterpret_cast<const uint8_t*>(""), [](const uint8_t*) {});
  return std::shared_ptr<const uint8_t>(static_cast<const uint8_t*>(p),
                                        [size](const uint8_t* q) { munmap(const_cast<uint8_t*>(q), size); });
}

}  // namespace

int64_t StageTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Int8TileLayout StageTensor::layout() const { return Int8TileLayout{rows, columns, group_size, output_tile}; }

std::string PackProblem::to_string() const {
  std::string s = file;
  if (!field.empty()) s += (s.empty() ? "" : ": ") + field;
  if (offset) s += " (byte " + std::to_string(*offset) + ")";
  s += ": " + problem;
  if (!expected.empty() || !found.empty()) s += ": expected " + expected + ", found " + found;
  return s;
}

void throw_pack_problems(const std::vector<PackProblem>& problems, const std::string& where) {
  std::string msg = std::to_string(problems.size()) + " problem" + (problems.size() == 1 ? "" : "s") + " in the stage pack:";
  for (const auto& p : problems) msg += "\n  - " + p.to_string();
  throw Error(msg, where, "re-create the pack with `ember pack trellis`, or copy the missing or damaged files again");
}

StageManifest parse_stage_manifest(const std::string& text, const std::string& file, std::vector<PackProblem>& problems) {
  StageManifest m;
  try {
    m.raw = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(std::string("malformed JSON: ") + e.what(), file + ", " + line_col(text, e.byte ? e.byte - 1 : 0),
                "fix the JSON syntax at that position or re-create the pack");
  }
  if (!m.raw.is_object()) throw Error("the manifest is not a JSON object", file, "re-create the pack");
  Fields f(file, problems);
  m.schema = f.str(m.raw, "schema", "schema").value_or("");
  if (m.raw.contains("version") && !m.raw["version"].is_number_integer())
    problems.push_back({file, "version", std::nullopt, "wrong type", "an integer", m.raw["version"].dump()});
  else
    m.version = static_cast<int>(f.uint(m.raw, "version", "version").value_or(0));
  m.stage = f.str(m.raw, "stage", "stage").value_or("");
  m.upstream_revision = m.raw.contains("upstreamRevision") ? f.str(m.raw, "upstreamRevision", "upstreamRevision").value_or("") : "";
  if (!m.raw.contains("shards") || !m.raw["shards"].is_array()) {
    problems.push_back({file, "shards", std::nullopt, "missing or not an array", "a list of shards", "nothing"});
  } else {
    for (size_t i = 0; i < m.raw["shards"].size(); i++) {
      const json& s = m.raw["shards"][i];
      std::string field = "shards[" + std::to_string(i) + "]";
      ShardInfo info;
      if (!s.is_object()) {
        problems.push_back({file, field, std::nullopt, "wrong type", "an object", s.dump()});
      } else {
        info.file = f.str(s, "file", field + ".file").value_or("");
        info.bytes = f.uint(s, "bytes", field + ".bytes").value_or(0);
        info.sha256 = f.str(s, "sha256", field + ".sha256").value_or("");
      }
      m.shards.push_back(info);
    }
  }
  if (m.raw.contains("files")) {
    if (!m.raw["files"].is_array()) {
      problems.push_back({file, "files", std::nullopt, "wrong type", "a list of files", m.raw["files"].dump()});
    } else {
      for (size_t i = 0; i < m.raw["files"].size(); i++) {
        const json& s = m.raw["files"][i];
        std::string field = "files[" + std::to_string(i) + "]";
        ShardInfo info;
        if (!s.is_object()) {
          problems.push_back({file, field, std::nullopt, "wrong type", "an object", s.dump()});
        } else {
          info.file = f.str(s, "file", field + ".file").value_or("");
          info.bytes = f.uint(s, "bytes", field + ".bytes").value_or(0);
          info.sha256 = f.str(s, "sha256", field + ".sha256").value_or("");
        }
        m.files.push_back(info);
      }
    }
  }
  if (const json* ts = f.object(m.raw, "tensors", "tensors"))
    for (const auto& [name, v] : ts->items()) m.tensors[name] = parse_tensor(name, v, f, file, problems);
  return m;
}

std::vector<PackProblem> validate_stage_manifest(const StageManifest& m, const std::string& file) {
  std::vector<PackProblem> problems;
  if (m.schema != kStagePackSchema)
    problems.push_back({file, "schema", std::nullopt, "not a TRELLIS stage pack", std::string("\"") + kStagePackSchema + "\"",
                        "\"" + m.schema + "\""});
  if (m.version != kStagePackVersion)
    problems.push_back({file, "version", std::nullopt, "unsupported version", std::to_string(kStagePackVersion),
                        std::to_string(m.version)});
  for (size_t i = 0; i < m.shards.size() + m.files.size(); i++) {
    const bool side = i >= m.shards.size();
    const ShardInfo& s = side ? m.files[i - m.shards.size()] : m.shards[i];
    std::string field = side ? "files[" + std::to_string(i - m.shards.size()) + "]" : "shards[" + std::to_string(i) + "]";
    if (s.file.empty() || s.file.find('/') != std::string::npos || s.file == "." || s.file == "..")
      problems.push_back({file, field + ".file", std::nullopt, "bad shard file name", "a plain file name", "\"" + s.file + "\""});
    bool hex = s.sha256.size() == 64 && std::all_of(s.sha256.begin(), s.sha256.end(), [](char c) {
                 return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
               });
    if (!hex) problems.push_back({file, field + ".sha256", std::nullopt, "not a sha256 digest", "64 lowercase hex digits", "\"" + s.sha256 + "\""});
    for (size_t j = 0; j < i; j++) {
      const ShardInfo& o = j < m.shards.size() ? m.shards[j] : m.files[j - m.shards.size()];
      if (o.file == s.file && !s.file.empty())
        problems.push_back({file, field + ".file", std::nullopt, "file listed twice", "a unique file", s.file});
    }
    if (s.file == kStageManifestFile)
      problems.push_back({file, field + ".file", std::nullopt, "names the manifest itself", "another file", s.file});
  }
  if (m.tensors.empty()) problems.push_back({file, "tensors", std::nullopt, "no tensors", "at least one", "none"});
  std::vector<std::vector<Range>> by_shard(m.shards.size());
  for (const auto& [name, t] : m.tensors) check_tensor(m, t, file, problems, by_shard);
  for (size_t s = 0; s < by_shard.size(); s++) {
    auto& ranges = by_shard[s];
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    size_t reach = 0;  // the range reaching furthest so far
    for (size_t i = 1; i < ranges.size(); i++) {
      if (ranges[i].begin < ranges[reach].end && ranges[i].end > ranges[i].begin)
        problems.push_back({m.shards[s].file, ranges[i].label, ranges[i].begin, "overlaps " + ranges[reach].label,
                            "start >= " + std::to_string(ranges[reach].end), std::to_string(ranges[i].begin)});
      if (ranges[i].end > ranges[reach].end) reach = i;
    }
  }
  return problems;
}

StageManifest load_stage_manifest(const fs::path& path) {
  std::vector<PackProblem> problems;
  StageManifest m = parse_stage_manifest(read_file(path), path.string(), problems);
  auto more = validate_stage_manifest(m, path.string());
  problems.insert(problems.end(), more.begin(), more.end());
  if (!problems.empty()) throw_pack_problems(problems, path.string());
  return m;
}

std::string stage_manifest_json(const StageManifest& m) {
  nlohmann::ordered_json j;
  j["schema"] = m.schema;
  j["version"] = m.version;
  j["stage"] = m.stage;
  j["upstreamRevision"] = m.upstream_revision;
  j["shards"] = nlohmann::ordered_json::array();
  for (const auto& s : m.shards) {
    nlohmann::ordered_json sj;
    sj["file"] = s.file;
    sj["bytes"] = s.bytes;
    sj["sha256"] = s.sha256;
    j["shards"].push_back(sj);
  }
  if (!m.files.empty()) {
    j["files"] = nlohmann::ordered_json::array();
    for (const auto& s : m.files) {
      nlohmann::ordered_json sj;
      sj["file"] = s.file;
      sj["bytes"] = s.bytes;
      sj["sha256"] = s.sha256;
      j["files"].push_back(sj);
    }
  }
  auto ref = [](const StageTensorRef& r) {
    nlohmann::ordered_json rj;
    rj["shard"] = r.shard;
    rj["offset"] = r.offset;
    rj["bytes"] = r.bytes;
    return rj;
  };
  j["tensors"] = nlohmann::ordered_json::object();
  for (const auto& [name, t] : m.tensors) {
    nlohmann::ordered_json tj;
    tj["shape"] = t.shape;
    tj["encoding"] = t.encoding;
    if (t.quantized()) {
      tj["bits"] = t.bits;
      tj["group_size"] = t.group_size;
      tj["output_tile"] = t.output_tile;
      tj["rows"] = t.rows;
      tj["columns"] = t.columns;
      tj["padded_rows"] = t.padded_rows;
      tj["padded_columns"] = t.padded_columns;
    } else {
      tj["dtype"] = t.dtype;
    }
    tj["data"] = ref(t.data);
    if (t.scales) tj["scales"] = ref(*t.scales);
    j["tensors"][name] = tj;
  }
  return j.dump(2) + "\n";
}

StagePack StagePack::open(const fs::path& dir, bool verify_sha256) {
  std::vector<PackProblem> problems;
  StagePack p = load(dir, verify_sha256, problems);
  if (!problems.empty()) throw_pack_problems(problems, dir.string());
  return p;
}

StagePackCheck check_stage_pack(const fs::path& dir, bool verify_sha256) {
  StagePackCheck check;
  StagePack p = StagePack::load(dir, verify_sha256, check.problems);
  check.manifest = std::move(p.manifest_);
  return check;
}

// Malformed JSON and a missing manifest throw (nothing else can be checked); every other
// problem is collected.
StagePack StagePack::load(const fs::path& dir, bool verify_sha256, std::vector<PackProblem>& problems) {
  StagePack p;
  p.dir_ = dir;
  fs::path manifest_path = dir / kStageManifestFile;
  if (!fs::is_regular_file(manifest_path))
    throw Error("no manifest.json: not a stage pack directory", dir.string(),
                "pass the directory `ember pack trellis` wrote (it holds manifest.json and stage-NNN.bin)");
  p.manifest_ = parse_stage_manifest(read_file(manifest_path), manifest_path.string(), problems);
  auto more = validate_stage_manifest(p.manifest_, manifest_path.string());
  problems.insert(problems.end(), more.begin(), more.end());
  for (const auto& s : p.manifest_.shards) {
    fs::path sp = dir / s.file;
    std::error_code ec;
    if (s.file.empty() || !fs::is_regular_file(sp, ec)) {
      problems.push_back({sp.string(), "", std::nullopt, "missing shard file", "a file of " + std::to_string(s.bytes) + " bytes", "nothing"});
      p.shards_.push_back(nullptr);
      continue;
    }
    uint64_t size = fs::file_size(sp, ec);
    if (size != s.bytes) {
      problems.push_back({sp.string(), "", std::min(size, s.bytes), size < s.bytes ? "truncated shard" : "shard longer than the manifest says",
                          std::to_string(s.bytes) + " bytes", std::to_string(size) + " bytes"});
      p.shards_.push_back(nullptr);
      continue;
    }
    auto mapped = map_file(sp, size);
    if (!mapped) {
      problems.push_back({sp.string(), "", std::nullopt, "cannot read or map the shard", "a readable file", "an error"});
      p.shards_.push_back(nullptr);
      continue;
    }
    if (verify_sha256) {
      std::string digest = sha256_hex({mapped.get(), size});
      if (digest != s.sha256)
        problems.push_back({sp.string(), "sha256", std::nullopt, "sha256 mismatch (the shard is damaged or from another pack)",
                            s.sha256, digest});
    }
    p.shards_.push_back(std::move(mapped));
  }
  for (const auto& s : p.manifest_.files) {
    fs::path sp = dir / s.file;
    std::error_code ec;
    if (s.file.empty() || !fs::is_regular_file(sp, ec)) {
      problems.push_back({sp.string(), "", std::nullopt, "missing file of the stage", "a file of " + std::to_string(s.bytes) + " bytes", "nothing"});
      continue;
    }
    std::string text = read_file(sp);
    if (text.size() != s.bytes) {
      problems.push_back({sp.string(), "", std::nullopt, "file size differs from the manifest", std::to_string(s.bytes) + " bytes",
                          std::to_string(text.size()) + " bytes"});
      continue;
    }
    if (verify_sha256) {
      std::string digest = sha256_hex({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
      if (digest != s.sha256)
        problems.push_back({sp.string(), "sha256", std::nullopt, "sha256 mismatch (the file was changed or is from another pack)", s.sha256, digest});
    }
    p.side_files_[s.file] = std::move(text);
  }
  return p;
}

std::string StagePack::side_file(const std::string& name) const {
  auto it = side_files_.find(name);
  if (it == side_files_.end())
    throw Error("the stage pack has no file '" + name + "'", (dir_ / kStageManifestFile).string(),
                "re-pack the stage with a current `ember pack trellis`");
  return it->second;
}

const StageTensor& StagePack::tensor(const std::string& name) const {
  auto it = manifest_.tensors.find(name);
  if (it == manifest_.tensors.end())
    throw Error("tensor '" + name + "' is not in the stage pack", (dir_ / kStageManifestFile).string(),
                "the pack is of another stage or model; re-pack from the right checkpoint");
  return it->second;
}

std::span<const uint8_t> StagePack::data(const StageTensor& t) const {
  return {shards_.at(t.data.shard).get() + t.data.offset, t.data.bytes};
}

std::span<const uint8_t> StagePack::scales(const StageTensor& t) const {
  if (!t.scales) throw Error("tensor '" + t.name + "' has no scales (encoding " + t.encoding + ")", dir_.string());
  return {shards_.at(t.scales->shard).get() + t.scales->offset, t.scales->bytes};
}

std::vector<float> StagePack::dequantize(const std::string& name) const {
  const StageTensor& t = tensor(name);
  if (t.quantized()) return dequantize_int8_tiles(data(t), scales(t), t.layout());
  auto bytes = data(t);
  std::vector<float> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); i++) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    out[i] = f16_to_f32(h);
  }
  return out;
}

}  // namespace ember::formats
