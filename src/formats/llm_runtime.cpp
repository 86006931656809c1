#include "formats/llm_runtime.h"

#include <set>
#include <type_traits>

#include "common/error.h"

namespace ember::formats {
namespace {

// Reads fields of one JSON object, remembering which keys it used; what is left over is kept
// as `extra` and reported as unknown.
class ObjectReader {
 public:
  ObjectReader(const OrderedJson& j, std::string path, const std::string& file, Problems& problems,
               std::vector<std::string>& unknown)
      : j_(j), path_(std::move(path)), file_(file), problems_(problems), unknown_(unknown) {
    if (!j_.is_object()) {
      problem(path_, "is not a JSON object", "an object", j_.type_name());
      ok_ = false;
    }
  }
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }
  std::string child(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  // The value at `key`, or null when absent (a problem when required).
  const OrderedJson* get(const std::string& key, bool required) {
    used_.insert(key);
    if (!ok_) return nullptr;
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required) problem(child(key), "required field is missing", "a value", "nothing");
      return nullptr;
    }
    return &*it;
  }
  template <typename T>
  void integer(const std::string& key, T& out, bool required) {
    const OrderedJson* v = get(key, required);
    if (!v) return;
    if (!v->is_number_integer() || (std::is_unsigned_v<T> && v->get<int64_t>() < 0))
      problem(child(key), "wrong type", std::is_unsigned_v<T> ? "a non-negative integer" : "an integer", v->dump());
    else
      out = v->get<T>();
  }
  void number(const std::string& key, std::optional<double>& out) {
    const OrderedJson* v = get(key, false);
    if (!v) return;
    if (!v->is_number()) problem(child(key), "wrong type", "a number", v->dump());
    else out = v->get<double>();
  }
  void boolean(const std::string& key, bool& out, bool required = false) {
    const OrderedJson* v = get(key, required);
    if (!v) return;
    if (!v->is_boolean()) problem(child(key), "wrong type", "true or false", v->dump());
    else out = v->get<bool>();
  }
  void string(const std::string& key, std::string& out, bool required = false) {
    const OrderedJson* v = get(key, required);
    if (!v) return;
    if (!v->is_string()) problem(child(key), "wrong type", "a string", v->dump());
    else out = v->get<std::string>();
  }
  const OrderedJson* array(const std::string& key, bool required) {
    const OrderedJson* v = get(key, required);
    if (v && !v->is_array()) {
      problem(child(key), "wrong type", "an array", v->type_name());
      return nullptr;
    }
    return v;
  }
  OrderedJson extras() {
    OrderedJson e = OrderedJson::object();
    if (!ok_) return e;
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!used_.count(it.key())) {
        e[it.key()] = it.value();
        unknown_.push_back(child(it.key()));
      }
    return e;
  }
  void problem(const std::string& field, const std::string& msg, const std::string& expected, const std::string& found) {
    problems_.add({file_, field, std::nullopt, msg, expected, found});
  }

 private:
  const OrderedJson& j_;
  std::string path_;
  const std::string& file_;
  Problems& problems_;
  std::vector<std::string>& unknown_;
  std::set<std::string> used_;
  bool ok_ = true;
};

struct Ctx {
  const std::string& file;
  Problems& problems;
  std::vector<std::string>& unknown;
  ObjectReader reader(const OrderedJson& j, const std::string& path) { return ObjectReader(j, path, file, problems, unknown); }
};

std::string indexed(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

LlmShape parse_shape(Ctx& c, const OrderedJson& j, const std::string& path) {
  LlmShape s;
  ObjectReader r = c.reader(j, path);
  if (const OrderedJson* types = r.array("layerTypes", true)) {
    for (size_t i = 0; i < types->size(); i++) {
      const auto& t = (*types)[i];
      if (t == "conv") s.layer_types.push_back(LayerType::Conv);
      else if (t == "attention") s.layer_types.push_back(LayerType::Attention);
      else r.problem(indexed(r.child("layerTypes"), i), "unknown layer type", "\"conv\" or \"attention\"", t.dump());
    }
  }
  r.integer("hidden", s.hidden, true);
  r.integer("ffn", s.ffn, true);
  r.integer("vocab", s.vocab, true);
  r.integer("heads", s.heads, true);
  r.integer("kvHeads", s.kv_heads, true);
  r.integer("headDim", s.head_dim, true);
  r.integer("convCache", s.conv_cache, true);
  r.integer("quantBits", s.quant_bits, true);
  r.integer("quantBlock", s.quant_block, true);
  r.number("normEps", s.norm_eps);
  r.number("ropeTheta", s.rope_theta);
  s.extra = r.extras();
  return s;
}

Geometry parse_geometry(Ctx& c, const OrderedJson& j, const std::string& path) {
  Geometry g;
  ObjectReader r = c.reader(j, path);
  r.integer("workgroupSize", g.workgroup_size, true);
  r.integer("subgroupSize", g.subgroup_size, true);
  r.integer("rowsPerSubgroup", g.rows_per_subgroup, true);
  r.integer("subgroupsPerRow", g.subgroups_per_row, true);
  g.extra = r.extras();
  return g;
}

Runtime parse_runtime(Ctx& c, const OrderedJson& j) {
  Runtime rt;
  ObjectReader r = c.reader(j, "runtime");
  if (const OrderedJson* shape = r.get("shape", true)) rt.shape = parse_shape(c, *shape, r.child("shape"));
  r.string("weightsUrl", rt.weights_url);
  r.integer("weightBytes", rt.weight_bytes, true);
  if (const OrderedJson* secs = r.array("sections", true)) {
    for (size_t i = 0; i < secs->size(); i++) {
      ObjectReader sr = c.reader((*secs)[i], indexed(r.child("sections"), i));
      Section s;
      sr.string("name", s.name, true);
      sr.integer("offset", s.offset, true);
      sr.integer("bytes", s.bytes, true);
      s.extra = sr.extras();
      rt.sections.push_back(std::move(s));
    }
  }
  r.integer("maxQueries", rt.max_queries, false);
  r.integer("maxPositions", rt.max_positions, true);
  r.integer("samplePartials", rt.sample_partials, false);
  r.integer("planPosition", rt.plan_position, false);
  rt.max_total_positions = rt.max_positions;
  r.integer("maxTotalPositions", rt.max_total_positions, false);
  if (const OrderedJson* knee = r.array("knee", false)) {
    for (size_t i = 0; i < knee->size(); i++) {
      ObjectReader kr = c.reader((*knee)[i], indexed(r.child("knee"), i));
      KneeEntry k;
      kr.string("shape", k.shape, true);
      if (const OrderedJson* g = kr.get("geometry", true)) k.geometry = parse_geometry(c, *g, kr.child("geometry"));
      k.extra = kr.extras();
      rt.knee.push_back(std::move(k));
    }
  }
  r.string("dequantVariant", rt.dequant_variant);
  if (const OrderedJson* fo = r.array("flashOptima", false)) {
    for (size_t i = 0; i < fo->size(); i++) {
      ObjectReader fr = c.reader((*fo)[i], indexed(r.child("flashOptima"), i));
      FlashOptimum f;
      fr.integer("positions", f.positions, true);
      fr.integer("blocks", f.blocks, true);
      f.extra = fr.extras();
      rt.flash_optima.push_back(std::move(f));
    }
  }
  if (const OrderedJson* ef = r.array("extraFeatures", false)) {
    for (size_t i = 0; i < ef->size(); i++) {
      if ((*ef)[i].is_string()) rt.extra_features.push_back((*ef)[i].get<std::string>());
      else r.problem(indexed(r.child("extraFeatures"), i), "wrong type", "a feature name string", (*ef)[i].dump());
    }
  }
  r.string("powerPreference", rt.power_preference);
  r.integer("expectedSubgroupSize", rt.expected_subgroup_size, false);
  rt.extra = r.extras();
  return rt;
}

// mlpHalfDot / mlpHalfProduct name the step done in f16; `false` means none.
void half_choice(ObjectReader& r, const std::string& key, std::string& out) {
  const OrderedJson* v = r.get(key, false);
  if (!v) return;
  if (v->is_string()) out = v->get<std::string>();
  else if (v->is_boolean() && !v->get<bool>()) out = "none";
  else r.problem(r.child(key), "wrong type", "a step name (\"gate\", \"down\", ...) or false", v->dump());
}

Candidate parse_candidate(Ctx& c, const OrderedJson& j) {
  Candidate cd;
  ObjectReader r = c.reader(j, "candidate");
  r.string("key", cd.key);
  r.boolean("flash", cd.flash);
  r.boolean("unfused", cd.unfused);
  r.integer("padding", cd.padding, false);
  r.string("flashMode", cd.flash_mode);
  if (const OrderedJson* mv = r.get("matvec", false)) {
    if (!mv->is_object()) {
      r.problem(r.child("matvec"), "wrong type", "an object keyed by matrix shape", mv->type_name());
    } else {
      for (auto it = mv->begin(); it != mv->end(); ++it) {
        ObjectReader mr = c.reader(it.value(), r.child("matvec") + "." + it.key());
        MatvecChoice m;
        if (const OrderedJson* g = mr.get("geometry", true)) m.geometry = parse_geometry(c, *g, mr.child("geometry"));
        mr.string("variant", m.variant, true);
        m.extra = mr.extras();
        cd.matvec.emplace_back(it.key(), std::move(m));
      }
    }
  }
  r.string("mlpMode", cd.mlp_mode);
  r.integer("mlpSlices", cd.mlp_slices, false);
  r.integer("mlpWorkgroup", cd.mlp_workgroup, false);
  r.boolean("normSubgroup", cd.norm_subgroup);
  r.boolean("convFuse", cd.conv_fuse);
  r.boolean("flashOnline", cd.flash_online);
  r.integer("flashBlocks", cd.flash_blocks, false);
  r.boolean("mlpPair", cd.mlp_pair);
  r.integer("foldLanes", cd.fold_lanes, false);
  r.boolean("foldSubgroup", cd.fold_subgroup);
  half_choice(r, "mlpHalfDot", cd.mlp_half_dot);
  half_choice(r, "mlpHalfProduct", cd.mlp_half_product);
  cd.extra = r.extras();
  return cd;
}

void append_extra(OrderedJson& j, const OrderedJson& extra) {
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
}

OrderedJson geometry_json(const Geometry& g) {
  OrderedJson j = {{"workgroupSize", g.workgroup_size},
                   {"subgroupSize", g.subgroup_size},
                   {"rowsPerSubgroup", g.rows_per_subgroup},
                   {"subgroupsPerRow", g.subgroups_per_row}};
  append_extra(j, g.extra);
  return j;
}

}  // namespace

const char* layer_type_name(LayerType t) { return t == LayerType::Conv ? "conv" : "attention"; }

const Section* Runtime::find_section(const std::string& name) const {
  for (const auto& s : sections)
    if (s.name == name) return &s;
  return nullptr;
}

const Geometry* Runtime::knee_for(const std::string& matrix_shape) const {
  for (const auto& k : knee)
    if (k.shape == matrix_shape) return &k.geometry;
  return nullptr;
}

const MatvecChoice* Candidate::matvec_for(const std::string& matrix_shape) const {
  for (const auto& [name, m] : matvec)
    if (name == matrix_shape) return &m;
  return nullptr;
}

RuntimeFile parse_runtime_json(const std::string& text, const std::string& file, Problems& problems) {
  return parse_runtime_json(parse_json_text(text, file), file, problems);
}

RuntimeFile parse_runtime_json(const OrderedJson& j, const std::string& file, Problems& problems) {
  RuntimeFile f;
  Ctx c{file, problems, f.unknown_keys};
  ObjectReader top(j, "", file, problems, f.unknown_keys);
  if (!top.ok()) return f;
  if (const OrderedJson* rt = top.get("runtime", true)) f.runtime = parse_runtime(c, *rt);
  if (const OrderedJson* cd = top.get("candidate", false)) {
    f.candidate = parse_candidate(c, *cd);
    f.has_candidate = true;
  }
  f.extra = top.extras();
  return f;
}

RuntimeFile parse_runtime_json(const std::string& text, const std::string& file) {
  Problems problems;
  RuntimeFile f = parse_runtime_json(text, file, problems);
  problems.throw_if_any("invalid runtime manifest", file, "compare it with the layout ember pack writes");
  return f;
}

OrderedJson to_json(const LlmShape& s) {
  OrderedJson types = OrderedJson::array();
  for (LayerType t : s.layer_types) types.push_back(layer_type_name(t));
  OrderedJson j = {{"layerTypes", types}, {"hidden", s.hidden},     {"ffn", s.ffn},
                   {"vocab", s.vocab},    {"heads", s.heads},       {"kvHeads", s.kv_heads},
                   {"headDim", s.head_dim}, {"convCache", s.conv_cache}, {"quantBits", s.quant_bits},
                   {"quantBlock", s.quant_block}};
  if (s.norm_eps) j["normEps"] = *s.norm_eps;
  if (s.rope_theta) j["ropeTheta"] = *s.rope_theta;
  append_extra(j, s.extra);
  return j;
}

OrderedJson to_json(const Candidate& c) {
  OrderedJson matvec = OrderedJson::object();
  for (const auto& [name, m] : c.matvec) {
    OrderedJson mj = {{"geometry", geometry_json(m.geometry)}, {"variant", m.variant}};
    append_extra(mj, m.extra);
    matvec[name] = mj;
  }
  OrderedJson j = {{"key", c.key},
                   {"flash", c.flash},
                   {"unfused", c.unfused},
                   {"padding", c.padding},
                   {"flashMode", c.flash_mode},
                   {"matvec", matvec},
                   {"mlpMode", c.mlp_mode},
                   {"mlpSlices", c.mlp_slices},
                   {"mlpWorkgroup", c.mlp_workgroup},
                   {"normSubgroup", c.norm_subgroup},
                   {"convFuse", c.conv_fuse},
                   {"flashOnline", c.flash_online},
                   {"flashBlocks", c.flash_blocks},
                   {"mlpPair", c.mlp_pair},
                   {"foldLanes", c.fold_lanes},
                   {"foldSubgroup", c.fold_subgroup},
                   {"mlpHalfDot", c.mlp_half_dot},
                   {"mlpHalfProduct", c.mlp_half_product}};
  append_extra(j, c.extra);
  return j;
}

OrderedJson to_json(const RuntimeFile& f) {
  const Runtime& r = f.runtime;
  OrderedJson sections = OrderedJson::array();
  for (const auto& s : r.sections) {
    OrderedJson sj = {{"name", s.name}, {"offset", s.offset}, {"bytes", s.bytes}};
    append_extra(sj, s.extra);
    sections.push_back(sj);
  }
  OrderedJson knee = OrderedJson::array();
  for (const auto& k : r.knee) {
    OrderedJson kj = {{"shape", k.shape}, {"geometry", geometry_json(k.geometry)}};
    append_extra(kj, k.extra);
    knee.push_back(kj);
  }
  OrderedJson optima = OrderedJson::array();
  for (const auto& o : r.flash_optima) {
    OrderedJson oj = {{"positions", o.positions}, {"blocks", o.blocks}};
    append_extra(oj, o.extra);
    optima.push_back(oj);
  }
  OrderedJson rt = {{"shape", to_json(r.shape)},
                    {"weightsUrl", r.weights_url},
                    {"weightBytes", r.weight_bytes},
                    {"sections", sections},
                    {"maxQueries", r.max_queries},
                    {"maxPositions", r.max_positions},
                    {"samplePartials", r.sample_partials},
                    {"planPosition", r.plan_position},
                    {"maxTotalPositions", r.max_total_positions},
                    {"knee", knee},
                    {"dequantVariant", r.dequant_variant},
                    {"flashOptima", optima},
                    {"extraFeatures", r.extra_features},
                    {"powerPreference", r.power_preference},
                    {"expectedSubgroupSize", r.expected_subgroup_size}};
  append_extra(rt, r.extra);
  OrderedJson j = {{"runtime", rt}};
  if (f.has_candidate) j["candidate"] = to_json(f.candidate);
  append_extra(j, f.extra);
  return j;
}

}  // namespace ember::formats
