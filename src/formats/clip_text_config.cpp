#include "formats/clip_text_config.h"

#include <cmath>

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

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

json ClipTextConfig::to_json(const std::string& dtype) const {
  return {{"architectures", {"CLIPTextModel"}},
          {"model_type", "clip_text_model"},
          {"vocab_size", vocab_size},
          {"hidden_size", hidden_size},
          {"intermediate_size", intermediate_size},
          {"projection_dim", projection_dim},
          {"num_hidden_layers", num_hidden_layers},
          {"num_attention_heads", num_attention_heads},
          {"max_position_embeddings", max_position_embeddings},
          {"hidden_act", hidden_act},
          {"layer_norm_eps", layer_norm_eps},
          {"attention_dropout", 0.0},
          {"initializer_range", 0.02},
          {"initializer_factor", 1.0},
          {"pad_token_id", pad_token_id},
          {"bos_token_id", bos_token_id},
          {"eos_token_id", eos_token_id},
          {"dtype", dtype}};
}

ClipTextConfig clip_vit_l14_text_config() { return ClipTextConfig{}; }

ClipTextConfig clip_tiny_text_config() {
  ClipTextConfig c;
  c.vocab_size = 1000;
  c.hidden_size = 128;
  c.intermediate_size = 336;
  c.projection_dim = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.bos_token_id = 998;
  c.eos_token_id = 999;
  return c;
}

ClipTextConfig parse_clip_text_config(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error("config.json is not a JSON object", where);
  const std::string type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  const json* a = &j;
  if (type == "clip") {
    if (!j.contains("text_config") || !j["text_config"].is_object())
      throw Error("a CLIPConfig without a text_config object", where, "use the checkpoint's own config.json");
    a = &j["text_config"];
  } else if (type != "clip_text_model") {
    throw Error("model_type is " + (type.empty() ? std::string("missing") : "\"" + type + "\"") +
                    ", not \"clip_text_model\" or \"clip\": not a CLIP checkpoint",
                where, "pass the directory of a CLIPTextModel or CLIPModel checkpoint (e.g. openai/clip-vit-large-patch14)");
  }
  // transformers' CLIPTextConfig defaults for fields a file leaves out.
  ClipTextConfig c;
  c.vocab_size = get_int(*a, "vocab_size", 49408, where);
  c.hidden_size = get_int(*a, "hidden_size", 512, where);
  c.intermediate_size = get_int(*a, "intermediate_size", 2048, where);
  c.projection_dim = get_int(*a, "projection_dim", 512, where);
  c.num_hidden_layers = get_int(*a, "num_hidden_layers", 12, where);
  c.num_attention_heads = get_int(*a, "num_attention_heads", 8, where);
  c.max_position_embeddings = get_int(*a, "max_position_embeddings", 77, where);
  c.pad_token_id = get_int(*a, "pad_token_id", 1, where);
  c.bos_token_id = get_int(*a, "bos_token_id", 49406, where);
  c.eos_token_id = get_int(*a, "eos_token_id", 49407, where);
  if (a->contains("layer_norm_eps")) {
    if (!(*a)["layer_norm_eps"].is_number()) throw Error("field 'layer_norm_eps' must be a number", where);
    c.layer_norm_eps = (*a)["layer_norm_eps"].get<double>();
  }
  if (a->contains("hidden_act")) {
    if (!(*a)["hidden_act"].is_string()) throw Error("field 'hidden_act' must be a string", where);
    c.hidden_act = (*a)["hidden_act"].get<std::string>();
  }
  check_clip_text_config(c, where);
  return c;
}

void check_clip_text_config(const ClipTextConfig& c, const std::string& where) {
  auto fail = [&](const std::string& what, const std::string& fix) { throw Error(what, where, fix); };
  if (c.vocab_size <= 0 || c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_hidden_layers <= 0 ||
      c.num_attention_heads <= 0 || c.max_position_embeddings <= 0 || !(c.layer_norm_eps > 0))
    fail("every size and layer_norm_eps must be positive", "use the checkpoint's own config.json");
  if (c.hidden_size % c.num_attention_heads || c.head_dim() != 64)
    fail("hidden_size " + std::to_string(c.hidden_size) + " over " + std::to_string(c.num_attention_heads) +
             " heads is not heads of 64 channels",
         "ember's attention kernels implement heads of 64 (every released CLIP text model has them)");
  if (c.hidden_act != "quick_gelu")
    fail("hidden_act \"" + c.hidden_act + "\" is not supported", "ember implements quick_gelu, OpenAI CLIP's activation");
}

std::map<std::string, std::vector<int64_t>> clip_text_tensor_shapes(const ClipTextConfig& c) {
  const int64_t C = c.hidden_size, F = c.intermediate_size;
  std::map<std::string, std::vector<int64_t>> s;
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    s[name + ".weight"] = {out, in};
    s[name + ".bias"] = {out};
  };
  auto norm = [&](const std::string& name) {
    s[name + ".weight"] = {C};
    s[name + ".bias"] = {C};
  };
  s["text_model.embeddings.token_embedding.weight"] = {c.vocab_size, C};
  s["text_model.embeddings.position_embedding.weight"] = {c.max_position_embeddings, C};
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "text_model.encoder.layers." + std::to_string(i) + ".";
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) linear(p + "self_attn." + proj, C, C);
    norm(p + "layer_norm1");
    linear(p + "mlp.fc1", F, C);
    linear(p + "mlp.fc2", C, F);
    norm(p + "layer_norm2");
  }
  norm("text_model.final_layer_norm");
  return s;
}

std::map<std::string, std::vector<float>> synth_clip_text_weights(const ClipTextConfig& c, uint64_t seed) {
  check_clip_text_config(c, "synth config");
  SynthGaussian gauss(seed);
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, shape] : clip_text_tensor_shapes(c)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    const bool is_norm = name.find("layer_norm") != std::string::npos;
    if (name.find("token_embedding") != std::string::npos) {
      for (auto& x : v) x = gauss(0.0f, 1.0f);
    } else if (name.find("position_embedding") != std::string::npos) {
      for (auto& x : v) x = gauss(0.0f, 0.5f);
    } else if (is_norm && ends_with(name, ".weight")) {
      for (auto& x : v) x = gauss(1.0f, 0.1f);
    } else if (is_norm) {
      for (auto& x : v) x = gauss(0.0f, 0.05f);
    } else if (ends_with(name, ".bias")) {
      for (auto& x : v) x = gauss(0.0f, 0.02f);
    } else {  // a Linear weight [out, in]
      const float stddev = 1.0f / std::sqrt(static_cast<float>(shape[1]));
      for (auto& x : v) x = gauss(0.0f, stddev);
    }
    out[name] = std::move(v);
  }
  return out;
}

}  // namespace ember::formats
