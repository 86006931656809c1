#include "formats/ss_flow_config.h"

#include <cmath>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/synth_random.h"

namespace ember::formats {
using nlohmann::json;

namespace {

int64_t get_int(const json& a, const char* key, int64_t def, const std::string& where) {
  if (!a.contains(key) || a[key].is_null()) return def;
  if (!a[key].is_number_integer())
    throw Error(std::string("field '") + key + "' must be an integer, found " + a[key].dump(), where);
  return a[key].get<int64_t>();
}

bool get_bool(const json& a, const char* key, bool def, const std::string& where) {
  if (!a.contains(key)) return def;
  if (!a[key].is_boolean()) throw Error(std::string("field '") + key + "' must be true or false, found " + a[key].dump(), where);
  return a[key].get<bool>();
}

const std::vector<int64_t>& need(const std::map<std::string, std::vector<int64_t>>& shapes, const std::string& name,
                                 size_t rank, const std::string& where) {
  auto it = shapes.find(name);
  if (it == shapes.end())
    throw Error("tensor '" + name + "' is missing", where, "the checkpoint is incomplete or not a SparseStructureFlowModel");
  if (it->second.size() != rank)
    throw Error("tensor '" + name + "' has rank " + std::to_string(it->second.size()) + ", expected " + std::to_string(rank), where);
  return it->second;
}

using Gaussian = SynthGaussian;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

json SsFlowConfig::to_json() const {
  return {{"name", "SparseStructureFlowModel"},
          {"args",
           {{"resolution", resolution}, {"in_channels", in_channels}, {"out_channels", out_channels},
            {"model_channels", model_channels}, {"cond_channels", cond_channels}, {"num_blocks", num_blocks},
            {"num_heads", num_heads}, {"mlp_ratio", mlp_ratio}, {"patch_size", patch_size}, {"pe_mode", pe_mode},
            {"qk_rms_norm", qk_rms_norm}, {"qk_rms_norm_cross", qk_rms_norm_cross}, {"share_mod", share_mod},
            {"use_fp16", use_fp16}}}};
}

SsFlowConfig ss_flow_text_base_config() { return SsFlowConfig{}; }

SsFlowConfig ss_flow_tiny_config() {
  SsFlowConfig c;
  c.resolution = 4;
  c.model_channels = 128;
  c.cond_channels = 96;
  c.num_blocks = 2;
  c.num_heads = 2;
  c.num_head_channels = 64;
  return c;
}

SsFlowConfig parse_ss_flow_config(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error("the model config is not a JSON object", where);
  const json* args = &j;
  if (j.contains("args")) {
    if (j.contains("name") && j["name"] != "SparseStructureFlowModel")
      throw Error("config is for " + j["name"].dump() + ", not SparseStructureFlowModel", where,
                  "pass the ss_flow model's config (ckpts/ss_flow_*.json)");
    args = &j["args"];
  }
  const json& a = *args;
  SsFlowConfig c;
  c.resolution = get_int(a, "resolution", -1, where);
  c.in_channels = get_int(a, "in_channels", -1, where);
  c.model_channels = get_int(a, "model_channels", -1, where);
  c.cond_channels = get_int(a, "cond_channels", -1, where);
  c.out_channels = get_int(a, "out_channels", -1, where);
  c.num_blocks = get_int(a, "num_blocks", -1, where);
  for (auto [key, v] : {std::pair{"resolution", c.resolution}, {"in_channels", c.in_channels},
                        {"model_channels", c.model_channels}, {"cond_channels", c.cond_channels},
                        {"out_channels", c.out_channels}, {"num_blocks", c.num_blocks}})
    if (v < 0) throw Error(std::string("required field '") + key + "' is missing", where, "use the upstream model config");
  c.num_head_channels = get_int(a, "num_head_channels", 64, where);
  c.num_heads = get_int(a, "num_heads", 0, where);
  if (c.num_heads == 0 && c.num_head_channels > 0) c.num_heads = c.model_channels / c.num_head_channels;
  if (a.contains("mlp_ratio")) {
    if (!a["mlp_ratio"].is_number()) throw Error("field 'mlp_ratio' must be a number", where);
    c.mlp_ratio = a["mlp_ratio"].get<double>();
  }
  c.patch_size = get_int(a, "patch_size", 2, where);  // upstream's default
  if (a.contains("pe_mode")) c.pe_mode = a["pe_mode"].is_string() ? a["pe_mode"].get<std::string>() : "?";
  c.share_mod = get_bool(a, "share_mod", false, where);
  c.qk_rms_norm = get_bool(a, "qk_rms_norm", false, where);
  c.qk_rms_norm_cross = get_bool(a, "qk_rms_norm_cross", false, where);
  c.use_fp16 = get_bool(a, "use_fp16", false, where);
  check_ss_flow_config(c, where);
  return c;
}

SsFlowConfig read_ss_flow_config(const std::string& path) {
  std::string text = read_file(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(std::string("malformed JSON: ") + e.what(), path, "fix the config file");
  }
  return parse_ss_flow_config(j, path);
}

void check_ss_flow_config(const SsFlowConfig& c, const std::string& where) {
  auto fail = [&](const std::string& what) { throw Error(what, where, "use a valid SparseStructureFlowModel config"); };
  if (c.resolution <= 0 || c.in_channels <= 0 || c.model_channels <= 0 || c.cond_channels <= 0 || c.out_channels <= 0 ||
      c.num_blocks <= 0 || c.num_heads <= 0 || c.patch_size <= 0 || c.mlp_ratio <= 0)
    fail("every size must be positive");
  if (c.resolution % c.patch_size) fail("resolution " + std::to_string(c.resolution) + " is not a multiple of patch_size");
  if (c.model_channels % c.num_heads) fail("model_channels is not a multiple of num_heads");
  if (c.pe_mode != "ape") fail("pe_mode '" + c.pe_mode + "' is not supported (ember implements \"ape\")");
  if (c.model_channels / 3 / 2 == 0) fail("model_channels must be at least 6 for the position embedding");
}

std::map<std::string, std::vector<int64_t>> ss_flow_tensor_shapes(const SsFlowConfig& c) {
  const int64_t C = c.model_channels, p3 = c.patch_size * c.patch_size * c.patch_size;
  std::map<std::string, std::vector<int64_t>> s;
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    s[name + ".weight"] = {out, in};
    s[name + ".bias"] = {out};
  };
  linear("t_embedder.mlp.0", C, SsFlowConfig::kFreqDim);
  linear("t_embedder.mlp.2", C, C);
  if (c.share_mod) linear("adaLN_modulation.1", 6 * C, C);
  linear("input_layer", C, c.in_channels * p3);
  linear("out_layer", c.out_channels * p3, C);
  s["pos_emb"] = {c.tokens(), C};
  for (int64_t b = 0; b < c.num_blocks; b++) {
    std::string p = "blocks." + std::to_string(b) + ".";
    if (!c.share_mod) linear(p + "adaLN_modulation.1", 6 * C, C);
    linear(p + "self_attn.to_qkv", 3 * C, C);
    linear(p + "self_attn.to_out", C, C);
    if (c.qk_rms_norm) {
      s[p + "self_attn.q_rms_norm.gamma"] = {c.num_heads, c.head_dim()};
      s[p + "self_attn.k_rms_norm.gamma"] = {c.num_heads, c.head_dim()};
    }
    linear(p + "cross_attn.to_q", C, C);
    linear(p + "cross_attn.to_kv", 2 * C, c.cond_channels);
    linear(p + "cross_attn.to_out", C, C);
    if (c.qk_rms_norm_cross) {
      s[p + "cross_attn.q_rms_norm.gamma"] = {c.num_heads, c.head_dim()};
      s[p + "cross_attn.k_rms_norm.gamma"] = {c.num_heads, c.head_dim()};
    }
    s[p + "norm2.weight"] = {C};
    s[p + "norm2.bias"] = {C};
    linear(p + "mlp.mlp.0", c.mlp_channels(), C);
    linear(p + "mlp.mlp.2", C, c.mlp_channels());
  }
  return s;
}

SsFlowConfig infer_ss_flow_config(const std::map<std::string, std::vector<int64_t>>& shapes, const std::string& where) {
  SsFlowConfig c;
  const auto& in = need(shapes, "input_layer.weight", 2, where);
  c.model_channels = in[0];
  c.in_channels = in[1];
  c.patch_size = 1;
  c.out_channels = need(shapes, "out_layer.weight", 2, where)[0];
  c.num_blocks = 0;
  while (shapes.count("blocks." + std::to_string(c.num_blocks) + ".self_attn.to_qkv.weight")) c.num_blocks++;
  if (c.num_blocks == 0) throw Error("tensor 'blocks.0.self_attn.to_qkv.weight' is missing", where, "not a SparseStructureFlowModel checkpoint");
  c.cond_channels = need(shapes, "blocks.0.cross_attn.to_kv.weight", 2, where)[1];
  c.mlp_ratio = static_cast<double>(need(shapes, "blocks.0.mlp.mlp.0.weight", 2, where)[0]) / static_cast<double>(c.model_channels);
  c.share_mod = shapes.count("adaLN_modulation.1.weight") > 0;
  c.qk_rms_norm = shapes.count("blocks.0.self_attn.q_rms_norm.gamma") > 0;
  c.qk_rms_norm_cross = shapes.count("blocks.0.cross_attn.q_rms_norm.gamma") > 0;
  if (c.qk_rms_norm) {
    c.num_heads = need(shapes, "blocks.0.self_attn.q_rms_norm.gamma", 2, where)[0];
  } else {
    c.num_heads = std::max<int64_t>(1, c.model_channels / c.num_head_channels);
  }
  c.num_head_channels = c.model_channels / c.num_heads;
  const int64_t tokens = need(shapes, "pos_emb", 2, where)[0];
  c.resolution = static_cast<int64_t>(std::llround(std::cbrt(static_cast<double>(tokens))));
  if (c.resolution * c.resolution * c.resolution != tokens)
    throw Error("pos_emb has " + std::to_string(tokens) + " tokens, not a cube", where);
  check_ss_flow_config(c, where);
  // Every tensor the config implies must be there with its shape, and nothing else.
  for (const auto& [name, shape] : ss_flow_tensor_shapes(c)) {
    auto it = shapes.find(name);
    if (it == shapes.end())
      throw Error("tensor '" + name + "' is missing", where, "the checkpoint is incomplete or of another model");
    if (it->second != shape)
      throw Error("tensor '" + name + "' has shape " + json(it->second).dump() + ", the model's other tensors imply " +
                  json(shape).dump(), where);
  }
  return c;
}

std::vector<float> ss_flow_pos_emb(const SsFlowConfig& c) {
  const int64_t C = c.model_channels, G = c.grid(), fd = C / 3 / 2;
  std::vector<float> pe(static_cast<size_t>(c.tokens() * C), 0.0f);
  for (int64_t d = 0; d < G; d++)
    for (int64_t h = 0; h < G; h++)
      for (int64_t w = 0; w < G; w++) {
        float* row = pe.data() + ((d * G + h) * G + w) * C;
        const int64_t coord[3] = {d, h, w};
        for (int axis = 0; axis < 3; axis++)
          for (int64_t i = 0; i < fd; i++) {
            double f = 1.0 / std::pow(10000.0, static_cast<double>(i) / static_cast<double>(fd));
            double x = static_cast<double>(coord[axis]) * f;
            row[axis * 2 * fd + i] = static_cast<float>(std::sin(x));
            row[axis * 2 * fd + fd + i] = static_cast<float>(std::cos(x));
          }
      }
  return pe;
}

std::map<std::string, std::vector<float>> synth_ss_flow_weights(const SsFlowConfig& c, uint64_t seed) {
  check_ss_flow_config(c, "synth config");
  Gaussian gauss(seed);
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, shape] : ss_flow_tensor_shapes(c)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    if (name == "pos_emb") {
      v = ss_flow_pos_emb(c);
    } else if (ends_with(name, ".gamma") || ends_with(name, "norm2.weight")) {
      for (auto& x : v) x = gauss(1.0f, 0.1f);
    } else if (ends_with(name, ".bias")) {
      for (auto& x : v) x = gauss(0.0f, 0.02f);
    } else {  // a Linear weight [out, in]
      const float gain = name.find("adaLN_modulation") != std::string::npos ? 0.5f : 1.0f;
      const float stddev = gain / std::sqrt(static_cast<float>(shape[1]));
      for (auto& x : v) x = gauss(0.0f, stddev);
    }
    out[name] = std::move(v);
  }
  return out;
}

}  // namespace ember::formats
