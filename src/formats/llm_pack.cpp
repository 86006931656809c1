#include "formats/llm_pack.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/q4_quantize.h"

namespace ember::formats {
namespace fs = std::filesystem;
namespace {

constexpr const char* kRuntime = "runtime.json";
constexpr const char* kWeights = "weights.bin";
constexpr const char* kTokenizer = "tokenizer.json";

std::string num(uint64_t v) { return std::to_string(v); }

std::string section_field(size_t index, const std::string& name) {
  return "runtime.sections[" + std::to_string(index) + "] '" + name + "'";
}

// The shape must be one the layout and kernels can serve before its table means anything.
void check_shape(const Runtime& rt, Problems& p) {
  const LlmShape& s = rt.shape;
  auto bad = [&](const std::string& field, const std::string& msg, const std::string& expected, int64_t found) {
    p.add({kRuntime, "runtime.shape." + field, std::nullopt, msg, expected, std::to_string(found)});
  };
  if (s.quant_bits != 4) bad("quantBits", "unsupported quantization width", "4", s.quant_bits);
  if (s.quant_block != 32) bad("quantBlock", "unsupported quantization block", "32", s.quant_block);
  if (s.layer_types.empty()) p.add({kRuntime, "runtime.shape.layerTypes", std::nullopt, "no layers", "at least one", "0"});
  if (s.hidden <= 0 || s.hidden % 32) bad("hidden", "must be a positive multiple of 32", "a multiple of 32", s.hidden);
  if (s.ffn <= 0 || s.ffn % 32) bad("ffn", "must be a positive multiple of 32", "a multiple of 32", s.ffn);
  if (s.vocab <= 0) bad("vocab", "must be positive", "> 0", s.vocab);
  if (s.head_dim <= 0 || s.head_dim % 2) bad("headDim", "must be positive and even (RoPE rotates pairs)", "an even number", s.head_dim);
  if (s.heads <= 0) bad("heads", "must be positive", "> 0", s.heads);
  if (s.kv_heads <= 0 || (s.heads > 0 && s.heads % s.kv_heads)) bad("kvHeads", "must divide heads", "a divisor of " + std::to_string(s.heads), s.kv_heads);
  if (s.heads > 0 && s.head_dim > 0 && (s.heads * s.head_dim) % 32)
    bad("heads", "heads * headDim (the o_proj input width) must be a multiple of 32", "a multiple of 32", s.heads * s.head_dim);
  if (s.conv_cache <= 0) bad("convCache", "must be positive", "> 0", s.conv_cache);
  if (rt.max_positions <= 0) p.add({kRuntime, "runtime.maxPositions", std::nullopt, "must be positive", "> 0", std::to_string(rt.max_positions)});
  if (rt.max_total_positions <= 0 || rt.max_total_positions > rt.max_positions)
    p.add({kRuntime, "runtime.maxTotalPositions", std::nullopt, "KV capacity must be positive and within the rope tables",
           "1.." + std::to_string(rt.max_positions), std::to_string(rt.max_total_positions)});
  if (rt.max_queries <= 0) p.add({kRuntime, "runtime.maxQueries", std::nullopt, "must be positive", "> 0", std::to_string(rt.max_queries)});
  if (rt.sample_partials <= 0 || rt.sample_partials > 65535)
    p.add({kRuntime, "runtime.samplePartials", std::nullopt, "the sampler's workgroups must be one dispatch's worth", "1..65535",
           std::to_string(rt.sample_partials)});
}

// Declared sections against the expected table and against each other.
void check_sections(const Runtime& rt, const LlmLayout& expected, uint64_t file_bytes, bool have_file, Problems& p) {
  std::map<std::string, size_t> declared;
  size_t past_end = 0;
  for (size_t i = 0; i < rt.sections.size(); i++) {
    const Section& s = rt.sections[i];
    const std::string field = section_field(i, s.name);
    if (!declared.emplace(s.name, i).second) {
      p.add({kRuntime, field, s.offset, "duplicate section name", "one entry", "a second one"});
      continue;
    }
    const SectionSpec* spec = expected.find(s.name);
    if (!spec) {
      p.add({kRuntime, field, s.offset, "section is not part of the layout of this shape", "one of the shape's sections", "'" + s.name + "'"});
    } else if (s.bytes != spec->bytes) {
      p.add({kRuntime, field, s.offset, "byte count disagrees with the shape (" + std::string(section_kind_name(spec->kind)) + " " +
             std::to_string(spec->rows) + " x " + std::to_string(spec->cols) + ")", num(spec->bytes), num(s.bytes)});
    }
    if (s.offset % kSectionAlign)
      p.add({kRuntime, field, s.offset, "offset is not 256-aligned", "a multiple of 256", num(s.offset)});
    if (s.offset + s.bytes > rt.weight_bytes || s.offset + s.bytes < s.offset)
      p.add({kRuntime, field, s.offset, "section ends past weightBytes", "end <= " + num(rt.weight_bytes), "end " + num(s.offset + s.bytes)});
    else if (have_file && s.offset + s.bytes > file_bytes && past_end++ == 0)  // the first one; the rest are counted
      p.add({kWeights, field, s.offset, "section ends past the end of weights.bin (file truncated?)", "end <= " + num(file_bytes),
             "end " + num(s.offset + s.bytes)});
  }
  if (past_end > 1)
    p.add({kWeights, "runtime.sections", file_bytes, std::to_string(past_end - 1) + " more sections end past the end of weights.bin", "", ""});
  for (const SectionSpec& spec : expected.sections) {
    auto it = declared.find(spec.name);
    if (it == declared.end()) {
      p.add({kRuntime, "runtime.sections", spec.offset, "missing section '" + spec.name + "'",
             num(spec.bytes) + " bytes (" + section_kind_name(spec.kind) + ")", "nothing"});
      continue;
    }
    if (!spec.alias_of.empty()) {  // a tied alias must name exactly the target's bytes
      auto target = declared.find(spec.alias_of);
      if (target != declared.end()) {
        const Section& a = rt.sections[it->second];
        const Section& t = rt.sections[target->second];
        if (a.offset != t.offset || a.bytes != t.bytes)
          p.add({kRuntime, section_field(it->second, a.name), a.offset, "tied alias must share '" + t.name + "' exactly",
                 "offset " + num(t.offset) + ", " + num(t.bytes) + " bytes", "offset " + num(a.offset) + ", " + num(a.bytes) + " bytes"});
      }
    }
  }
  // Overlaps among the sections that own their bytes (declared aliases excluded).
  std::vector<size_t> owners;
  for (size_t i = 0; i < rt.sections.size(); i++) {
    const SectionSpec* spec = expected.find(rt.sections[i].name);
    if (spec && !spec->alias_of.empty()) continue;
    if (declared[rt.sections[i].name] != i) continue;  // duplicates already reported
    owners.push_back(i);
  }
  std::sort(owners.begin(), owners.end(), [&](size_t a, size_t b) { return rt.sections[a].offset < rt.sections[b].offset; });
  size_t last = SIZE_MAX;
  for (size_t i : owners) {
    const Section& s = rt.sections[i];
    if (s.bytes == 0) continue;
    if (last != SIZE_MAX) {
      const Section& prev = rt.sections[last];
      if (s.offset < prev.offset + prev.bytes)
        p.add({kRuntime, section_field(i, s.name), s.offset, "overlaps section '" + prev.name + "'",
               "offset >= " + num(prev.offset + prev.bytes), num(s.offset)});
      if (s.offset + s.bytes <= prev.offset + prev.bytes) continue;  // keep the one reaching further
    }
    last = i;
  }
}

struct Mapping {
  std::shared_ptr<const void> keep;
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};

Mapping map_file(const fs::path& path) {
  Mapping m;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error("cannot open", path.string(), "check the pack directory");
  struct stat st {};
  fstat(fd, &st);
  m.size = static_cast<uint64_t>(st.st_size);
  if (m.size == 0) {
    ::close(fd);
    return m;
  }
  void* p = mmap(nullptr, m.size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw Error("cannot memory-map", path.string());
  const uint64_t size = m.size;
  m.keep = std::shared_ptr<const void>(p, [size](const void* q) { munmap(const_cast<void*>(q), size); });
  m.data = static_cast<const uint8_t*>(p);
  return m;
}

fs::path weights_path(const fs::path& dir, const Runtime& rt) {
  std::string url = rt.weights_url.empty() ? kWeights : rt.weights_url;
  while (!url.empty() && url[0] == '/') url.erase(0, 1);
  return dir / url;
}

}  // namespace

LlmPackCheck check_llm_pack(const fs::path& dir) {
  LlmPackCheck c;
  c.dir = dir;
  const fs::path runtime_path = dir / kRuntime;
  if (!fs::is_regular_file(runtime_path)) {
    c.problems.add({kRuntime, "", std::nullopt, "missing: " + runtime_path.string() + " is not a file", "", ""});
    return c;
  }
  std::string text = read_file(runtime_path);
  try {
    c.json = parse_json_text(text, kRuntime);
  } catch (const Error& e) {
    c.problems.add({kRuntime, e.where().substr(std::string(kRuntime).size() + 2), std::nullopt, e.problem(), "", ""});
    return c;
  }
  c.parsed = true;
  c.file = parse_runtime_json(c.json, kRuntime, c.problems);
  const Runtime& rt = c.file.runtime;

  const fs::path wpath = weights_path(dir, rt);
  const bool have_file = fs::is_regular_file(wpath);
  if (!have_file) {
    c.problems.add({kWeights, "", std::nullopt, "missing: " + wpath.string() + " is not a file", "", ""});
  } else {
    c.weights_file_bytes = fs::file_size(wpath);
    if (c.weights_file_bytes < rt.weight_bytes)
      c.problems.add({kWeights, "file size", c.weights_file_bytes, "shorter than runtime.weightBytes (truncated?)",
                      num(rt.weight_bytes) + " bytes", num(c.weights_file_bytes) + " bytes"});
  }
  if (!fs::is_regular_file(dir / kTokenizer))
    c.problems.add({kTokenizer, "", std::nullopt, "missing: the pack needs its Hugging Face tokenizer.json", "a file", "nothing"});

  const size_t before = c.problems.size();
  check_shape(rt, c.problems);
  const bool shape_ok = c.problems.size() == before &&
                        std::none_of(c.problems.list().begin(), c.problems.list().end(),
                                     [](const Problem& p) { return p.field.rfind("runtime.shape", 0) == 0; });
  if (shape_ok) {
    c.expected = llm_layout(rt.shape, rt.max_positions);
    check_sections(rt, c.expected, c.weights_file_bytes, have_file, c.problems);
  }
  return c;
}

void check_llm_pack_values(LlmPackCheck& c) {
  if (!c.ok()) return;
  const LlmPack pack = LlmPack::open(c.dir);
  for (const SectionSpec& s : c.expected.sections) {
    if (!s.alias_of.empty() || (s.kind != SectionKind::F32 && s.kind != SectionKind::Scales && s.kind != SectionKind::KScales)) continue;
    std::span<const float> v = pack.f32_section(s.name);
    for (size_t i = 0; i < v.size(); i++) {
      if (std::isfinite(v[i])) continue;
      c.problems.add({kWeights, "section '" + s.name + "' element " + std::to_string(i), s.offset + 4 * i,
                      "non-finite value (the weights are damaged)", "a finite float", std::isnan(v[i]) ? "NaN" : "Inf"});
      break;
    }
  }
}

LlmPack LlmPack::open(const fs::path& dir) {
  LlmPackCheck c = check_llm_pack(dir);
  c.problems.throw_if_any("invalid LLM pack", dir.string(), "re-create it with `ember pack lfm2` or fix the listed fields");
  LlmPack pack;
  pack.dir_ = dir;
  pack.file_ = std::move(c.file);
  pack.json_ = std::move(c.json);
  pack.layout_ = std::move(c.expected);
  Mapping m = map_file(weights_path(dir, pack.file_.runtime));
  pack.mapping_ = m.keep;
  pack.data_ = m.data;
  return pack;
}

LlmPack LlmPack::with_file(RuntimeFile file) const {
  const Runtime& a = runtime();
  const Runtime& b = file.runtime;
  bool same = to_json(a.shape) == to_json(b.shape) && a.weight_bytes == b.weight_bytes && a.sections.size() == b.sections.size();
  for (size_t i = 0; same && i < a.sections.size(); i++)
    same = a.sections[i].name == b.sections[i].name && a.sections[i].offset == b.sections[i].offset && a.sections[i].bytes == b.sections[i].bytes;
  if (!same) throw Error("a runtime.json for other weights (shape or sections differ)", dir_.string(), "use a runtime.json of this pack");
  LlmPack pack = *this;
  pack.json_ = to_json(file);
  pack.file_ = std::move(file);
  return pack;
}

bool LlmPack::has_section(const std::string& name) const { return runtime().find_section(name) != nullptr; }

std::span<const uint8_t> LlmPack::section(const std::string& name) const {
  const Section* s = runtime().find_section(name);
  if (!s) throw Error("no section '" + name + "'", (dir_ / kRuntime).string(), "run `ember inspect` to list the sections");
  return {data_ + s->offset, s->bytes};
}

std::span<const float> LlmPack::f32_section(const std::string& name) const {
  std::span<const uint8_t> b = section(name);
  return {reinterpret_cast<const float*>(b.data()), b.size() / 4};
}

std::vector<float> LlmPack::dequantize(const std::string& matrix, const std::string& down_copy) const {
  for (const MatrixSpec& m : llm_matrices(shape())) {
    if (m.name != matrix) continue;
    if (m.asymmetric)
      return dequantize_q4_asymmetric(section(m.name + ".quant"), section(m.name + ".scales"), section(m.name + ".zero_points"), m.rows, m.cols);
    const std::string copy = down_copy.empty() ? candidate().down_copy() : down_copy;
    if (m.shape_key == "mlp_down" && copy == "kquant")
      return dequantize_q4_kmajor(section(m.name + ".kquant"), section(m.name + ".kscales"), m.rows, m.cols);
    return dequantize_q4_symmetric(section(m.name + ".quant"), section(m.name + ".scales"), m.rows, m.cols);
  }
  throw Error("no 4-bit matrix '" + matrix + "'", dir_.string(), "names look like L0.conv.in_proj, L2.attn.qkv, L0.mlp.down, head");
}

}  // namespace ember::formats
