#include "trellis/ss_flow_candidate.h"

#include <cstdio>
#include <set>
#include <utility>

#include "common/atomic_file.h"
#include "common/error.h"

namespace ember::trellis {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* variant_name(kernels::FlashVariant v) {
  switch (v) {
    case kernels::FlashVariant::Plain: return "plain";
    case kernels::FlashVariant::Quad: return "quad";
    case kernels::FlashVariant::Oct: return "oct";
    case kernels::FlashVariant::Tiled: return "tiled";
  }
  return "oct";
}

json geometry_json(const kernels::QMatmulGeometry& g) {
  return {{"wg_tokens", g.wg_tokens}, {"wg_rows", g.wg_rows},     {"k_step", g.k_step},
          {"vec4", g.vec4},           {"k_splits", g.k_splits},   {"prefetch", g.prefetch},
          {"rows_per_thread", g.rows_per_thread}, {"int8", g.int8}};
}

// Reads the fields of an object, each optional, rejecting keys it does not know.
class Fields {
 public:
  Fields(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j.is_object()) throw Error("expected a JSON object", where_);
    for (const auto& [k, v] : j.items()) unknown_.insert(k);
  }
  // After every known field was read: a key left over is a typo or another version's field.
  void done() const {
    if (!unknown_.empty()) throw Error("unknown key '" + *unknown_.begin() + "'", where_, "remove it, or run `ember tune --stage` again");
  }
  const json* find(const std::string& k) {
    unknown_.erase(k);
    auto it = j_.find(k);
    return it == j_.end() ? nullptr : &*it;
  }
  void count(const std::string& k, uint32_t& out, uint32_t lo, uint32_t hi) {
    if (const json* v = find(k)) {
      if (!v->is_number_unsigned() || v->get<uint64_t>() < lo || v->get<uint64_t>() > hi)
        throw Error("expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi), where_ + "." + k);
      out = v->get<uint32_t>();
    }
  }
  void flag(const std::string& k, bool& out) {
    if (const json* v = find(k)) {
      if (!v->is_boolean()) throw Error("expected true or false", where_ + "." + k);
      out = v->get<bool>();
    }
  }
  const std::string& where() const { return where_; }

 private:
  const json& j_;
  std::string where_;
  std::set<std::string> unknown_;
};

kernels::QMatmulGeometry geometry_from(const json& j, const std::string& where) {
  kernels::QMatmulGeometry g;
  Fields f(j, where);
  f.count("wg_tokens", g.wg_tokens, 1, 64);
  f.count("wg_rows", g.wg_rows, 2, 64);
  f.count("k_step", g.k_step, 4, 64);
  f.flag("vec4", g.vec4);
  f.count("k_splits", g.k_splits, 1, 64);
  f.flag("prefetch", g.prefetch);
  f.count("rows_per_thread", g.rows_per_thread, 8, 16);
  f.flag("int8", g.int8);
  f.done();
  if (g.wg_rows % 2 || 64 % g.k_step || g.k_step % 4 || (g.rows_per_thread != 8 && g.rows_per_thread != 16))
    throw Error("not a qmatmul geometry: wg_rows even, k_step a multiple of 4 dividing 64, rows_per_thread 8 or 16", where);
  return g;
}

}  // namespace

std::string candidate_device_key(const gpu::AdapterDescription& a) {
  char id[32];
  std::snprintf(id, sizeof id, "%04x:%04x", a.vendor_id, a.device_id);
  return std::string(id) + " " + a.backend;
}

json options_to_json(const SsFlowOptions& o) {
  json overrides = json::object();
  for (const auto& [region, g] : o.matmul_overrides) overrides[region] = geometry_json(g);
  const auto& t = o.attention_tiled;
  return {{"int8", o.int8},
          {"matmul", geometry_json(o.matmul)},
          {"narrow_matmul", o.narrow_matmul ? geometry_json(*o.narrow_matmul) : json(nullptr)},
          {"mlp2_k_splits", o.mlp2_k_splits},
          {"square_k_splits", o.square_k_splits},
          {"mlp0_rows_per_thread", o.mlp0_rows_per_thread},
          {"mlp2_rows_per_thread", o.mlp2_rows_per_thread},
          {"fuse_gelu", o.fuse_gelu},
          {"matmul_overrides", overrides},
          {"attention", variant_name(o.attention)},
          {"attention_queries", o.attention_queries},
          {"attention_keys", o.attention_keys},
          {"attention_key_splits", o.attention_key_splits},
          {"attention_lazy_rescale", o.attention_lazy_rescale},
          {"attention_fused_pv", o.attention_fused_pv},
          {"cross_attention_keys", o.cross_attention_keys},
          {"attention_prefetch", o.attention_prefetch},
          {"attention_tiled", {{"queries", t.queries}, {"queries_per_thread", t.queries_per_thread},
                               {"keys_per_thread", t.keys_per_thread}, {"prefetch", t.prefetch}}},
          {"subgroups", o.subgroups}};
}

SsFlowOptions options_from_json(const json& j, const std::string& where) {
  SsFlowOptions o;
  Fields f(j, where);
  f.flag("int8", o.int8);
  if (const json* g = f.find("matmul")) o.matmul = geometry_from(*g, where + ".matmul");
  if (const json* g = f.find("narrow_matmul")) {
    if (g->is_null()) o.narrow_matmul.reset();
    else o.narrow_matmul = geometry_from(*g, where + ".narrow_matmul");
  }
  f.count("mlp2_k_splits", o.mlp2_k_splits, 1, 48);
  f.count("square_k_splits", o.square_k_splits, 1, 12);
  f.count("mlp0_rows_per_thread", o.mlp0_rows_per_thread, 8, 16);
  f.count("mlp2_rows_per_thread", o.mlp2_rows_per_thread, 8, 16);
  for (uint32_t v : {o.mlp0_rows_per_thread, o.mlp2_rows_per_thread})
    if (v != 8 && v != 16) throw Error("rows per thread must be 8 or 16", where);
  f.flag("fuse_gelu", o.fuse_gelu);
  if (const json* m = f.find("matmul_overrides")) {
    if (!m->is_object()) throw Error("expected an object of REGION[@B]: geometry", where + ".matmul_overrides");
    for (const auto& [region, g] : m->items()) o.matmul_overrides[region] = geometry_from(g, where + ".matmul_overrides." + region);
  }
  if (const json* v = f.find("attention")) {
    const std::string name = v->is_string() ? v->get<std::string>() : "";
    if (name == "plain") o.attention = kernels::FlashVariant::Plain;
    else if (name == "quad") o.attention = kernels::FlashVariant::Quad;
    else if (name == "oct") o.attention = kernels::FlashVariant::Oct;
    else if (name == "tiled") o.attention = kernels::FlashVariant::Tiled;
    else throw Error("expected \"plain\", \"quad\", \"oct\" or \"tiled\"", where + ".attention");
  }
  f.count("attention_queries", o.attention_queries, 8, 1024);
  f.count("attention_keys", o.attention_keys, 8, 256);
  f.count("attention_key_splits", o.attention_key_splits, 1, 16);
  f.flag("attention_lazy_rescale", o.attention_lazy_rescale);
  f.flag("attention_fused_pv", o.attention_fused_pv);
  f.count("cross_attention_keys", o.cross_attention_keys, 8, 256);
  f.flag("attention_prefetch", o.attention_prefetch);
  if (const json* t = f.find("attention_tiled")) {
    Fields tf(*t, where + ".attention_tiled");
    tf.count("queries", o.attention_tiled.queries, 8, 1024);
    tf.count("queries_per_thread", o.attention_tiled.queries_per_thread, 4, 8);
    tf.count("keys_per_thread", o.attention_tiled.keys_per_thread, 4, 8);
    tf.flag("prefetch", o.attention_tiled.prefetch);
    tf.done();
  }
  f.flag("subgroups", o.subgroups);
  f.done();
  return o;
}

namespace {

json read_candidate_json(const fs::path& file) {
  const std::string text = read_file(file);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(std::string("not valid JSON: ") + e.what(), file.string(), "run `ember tune --stage` again, or delete the file");
  }
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() || j["format"] != kSsFlowCandidateFormat)
    throw Error(std::string("not an ss-flow candidate file (\"format\" is not \"") + kSsFlowCandidateFormat + "\")", file.string());
  if (!j.contains("version") || j["version"] != 1)
    throw Error("unsupported candidate version (this ember reads version 1)", file.string() + ".version");
  if (!j.contains("devices") || !j["devices"].is_object()) throw Error("expected an object \"devices\"", file.string());
  return j;
}

}  // namespace

std::optional<SsFlowCandidate> load_ss_flow_candidate_file(const fs::path& file, const gpu::AdapterDescription& adapter) {
  const json j = read_candidate_json(file);
  const std::string key = candidate_device_key(adapter);
  // Every entry is checked, not only this device's: a file that another GPU would reject is broken.
  std::optional<SsFlowCandidate> found;
  for (const auto& [k, e] : j["devices"].items()) {
    const std::string where = file.string() + ": devices[\"" + k + "\"]";
    if (!e.is_object() || !e.contains("options")) throw Error("expected an object with \"options\"", where);
    SsFlowCandidate c{options_from_json(e["options"], where + ".options"), e.value("tuned", json::object())};
    if (k == key) found = std::move(c);
  }
  return found;
}

std::optional<SsFlowCandidate> load_ss_flow_candidate(const fs::path& stage_dir, const gpu::AdapterDescription& adapter) {
  const fs::path file = stage_dir / kSsFlowCandidateFile;
  if (!fs::exists(file)) return std::nullopt;
  return load_ss_flow_candidate_file(file, adapter);
}

void save_ss_flow_candidate(const fs::path& file, const gpu::AdapterDescription& adapter, const SsFlowCandidate& c) {
  json j = fs::exists(file) ? read_candidate_json(file)
                            : json{{"format", kSsFlowCandidateFormat}, {"version", 1}, {"devices", json::object()}};
  j["devices"][candidate_device_key(adapter)] = {
      {"device", {{"name", adapter.name()}, {"vendor", adapter.vendor}, {"backend", adapter.backend}, {"driver", adapter.driver}}},
      {"tuned", c.tuned},
      {"options", options_to_json(c.options)}};
  const std::string text = j.dump(2) + "\n";
  // What we write must read back as the same options.
  if (options_from_json(json::parse(text)["devices"][candidate_device_key(adapter)]["options"], file.string()) != c.options)
    throw Error("the candidate does not read back as written", file.string());
  write_file_atomic(file, text);
}

SsFlowOptions stage_options(const fs::path& stage_dir, const gpu::AdapterDescription& adapter, std::string* source) {
  auto c = load_ss_flow_candidate(stage_dir, adapter);
  if (source) *source = c ? "candidate " + (stage_dir / kSsFlowCandidateFile).string() : "defaults";
  return c ? c->options : SsFlowOptions{};
}

}  // namespace ember::trellis
