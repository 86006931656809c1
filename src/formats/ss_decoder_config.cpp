#include "formats/ss_decoder_config.h"

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

std::string shape_json(const std::vector<int64_t>& s) { return json(s).dump(); }

void conv(std::map<std::string, std::vector<int64_t>>& s, const std::string& name, int64_t out, int64_t in) {
  s[name + ".weight"] = {out, in, 3, 3, 3};
  s[name + ".bias"] = {out};
}

void norm(std::map<std::string, std::vector<int64_t>>& s, const std::string& name, int64_t ch) {
  s[name + ".weight"] = {ch};
  s[name + ".bias"] = {ch};
}

void res_block(std::map<std::string, std::vector<int64_t>>& s, const std::string& p, int64_t ch) {
  norm(s, p + "norm1", ch);
  norm(s, p + "norm2", ch);
  conv(s, p + "conv1", ch, ch);
  conv(s, p + "conv2", ch, ch);
}

}  // namespace

json SsDecoderConfig::to_json() const {
  return {{"name", "SparseStructureDecoder"},
          {"args",
           {{"out_channels", out_channels}, {"latent_channels", latent_channels}, {"num_res_blocks", num_res_blocks},
            {"channels", channels}, {"num_res_blocks_middle", num_res_blocks_middle}, {"norm_type", norm_type},
            {"use_fp16", use_fp16}}}};
}

SsDecoderConfig ss_decoder_released_config() { return SsDecoderConfig{}; }

SsDecoderConfig ss_decoder_small_config() {
  SsDecoderConfig c;
  c.channels = {32, 16, 8};
  c.num_res_blocks = 1;
  c.num_res_blocks_middle = 1;
  return c;
}

SsDecoderConfig parse_ss_decoder_config(const json& j, const std::string& where) {
  if (!j.is_object()) throw Error("the config must be a JSON object", where);
  const json* a = &j;
  if (j.contains("models") && j["models"].is_object() && j["models"].contains("decoder")) a = &j["models"]["decoder"];
  if (a->contains("name") && (*a)["name"].is_string() && (*a)["name"] != "SparseStructureDecoder")
    throw Error("this config is for '" + (*a)["name"].get<std::string>() + "', not SparseStructureDecoder", where,
                "pass the decoder's config (ss_dec_conv3d_16l8_fp16.json)");
  if (a->contains("args")) a = &(*a)["args"];
  if (!a->is_object()) throw Error("'args' must be an object", where);
  SsDecoderConfig c;
  c.out_channels = get_int(*a, "out_channels", c.out_channels, where);
  c.latent_channels = get_int(*a, "latent_channels", c.latent_channels, where);
  if (!a->contains("num_res_blocks")) throw Error("field 'num_res_blocks' is missing", where);
  if (!a->contains("channels")) throw Error("field 'channels' is missing", where);
  c.num_res_blocks = get_int(*a, "num_res_blocks", c.num_res_blocks, where);
  c.num_res_blocks_middle = get_int(*a, "num_res_blocks_middle", 2, where);
  const json& ch = (*a)["channels"];
  if (!ch.is_array() || ch.empty()) throw Error("field 'channels' must be a non-empty list of integers", where);
  c.channels.clear();
  for (const auto& v : ch) {
    if (!v.is_number_integer()) throw Error("field 'channels' must be a list of integers, found " + ch.dump(), where);
    c.channels.push_back(v.get<int64_t>());
  }
  if (a->contains("norm_type")) {
    if (!(*a)["norm_type"].is_string()) throw Error("field 'norm_type' must be a string", where);
    c.norm_type = (*a)["norm_type"].get<std::string>();
  }
  if (a->contains("use_fp16")) {
    if (!(*a)["use_fp16"].is_boolean()) throw Error("field 'use_fp16' must be true or false", where);
    c.use_fp16 = (*a)["use_fp16"].get<bool>();
  }
  check_ss_decoder_config(c, where);
  return c;
}

SsDecoderConfig read_ss_decoder_config(const std::string& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::parse_error& e) {
    throw Error(std::string("malformed JSON: ") + e.what(), path);
  }
  return parse_ss_decoder_config(j, path);
}

void check_ss_decoder_config(const SsDecoderConfig& c, const std::string& where) {
  if (c.norm_type != "layer")
    throw Error("norm_type '" + c.norm_type + "' is not supported", where,
                "ember implements the channel LayerNorm (norm_type \"layer\") of the released decoders");
  if (c.out_channels < 1 || c.latent_channels < 1 || c.num_res_blocks < 0 || c.num_res_blocks_middle < 0)
    throw Error("channel and block counts must be positive", where);
  if (c.channels.empty() || c.channels.size() > 6) throw Error("between 1 and 6 levels of channels, found " + std::to_string(c.channels.size()), where);
  for (int64_t ch : c.channels)
    if (ch < 1 || ch > 4096) throw Error("level channels must be within 1..4096, found " + std::to_string(ch), where);
}

std::map<std::string, std::vector<int64_t>> ss_decoder_tensor_shapes(const SsDecoderConfig& c) {
  std::map<std::string, std::vector<int64_t>> s;
  conv(s, "input_layer", c.channels[0], c.latent_channels);
  for (int64_t i = 0; i < c.num_res_blocks_middle; i++) res_block(s, "middle_block." + std::to_string(i) + ".", c.channels[0]);
  int64_t j = 0;
  for (size_t level = 0; level < c.channels.size(); level++) {
    for (int64_t r = 0; r < c.num_res_blocks; r++) res_block(s, "blocks." + std::to_string(j++) + ".", c.channels[level]);
    if (level + 1 < c.channels.size()) conv(s, "blocks." + std::to_string(j++) + ".conv", c.channels[level + 1] * 8, c.channels[level]);
  }
  norm(s, "out_layer.0", c.channels.back());
  conv(s, "out_layer.2", c.out_channels, c.channels.back());
  return s;
}

SsDecoderConfig infer_ss_decoder_config(const std::map<std::string, std::vector<int64_t>>& shapes, const std::string& where) {
  auto need = [&](const std::string& name) -> const std::vector<int64_t>& {
    auto it = shapes.find(name);
    if (it == shapes.end())
      throw Error("tensor '" + name + "' is missing", where, "the checkpoint is incomplete or not a SparseStructureDecoder");
    if (it->second.size() != 5)
      throw Error("tensor '" + name + "' has shape " + shape_json(it->second) + ", expected a Conv3d weight [out, in, 3, 3, 3]", where);
    return it->second;
  };
  SsDecoderConfig c;
  const auto& in = need("input_layer.weight");
  c.channels = {in[0]};
  c.latent_channels = in[1];
  c.num_res_blocks_middle = 0;
  while (shapes.count("middle_block." + std::to_string(c.num_res_blocks_middle) + ".conv1.weight")) c.num_res_blocks_middle++;
  // blocks.*: res blocks (conv1) and upsamplers (conv) in order; the res blocks before the first
  // upsampler give num_res_blocks.
  int64_t res_in_level = 0;
  bool first_level = true;
  c.num_res_blocks = 0;
  for (int64_t j = 0;; j++) {
    const std::string p = "blocks." + std::to_string(j) + ".";
    if (shapes.count(p + "conv1.weight")) {
      res_in_level++;
    } else if (shapes.count(p + "conv.weight")) {
      const auto& w = need(p + "conv.weight");
      if (w[0] % 8 != 0) throw Error("tensor '" + p + "conv.weight' has " + std::to_string(w[0]) + " outputs, not 8 x channels", where);
      if (first_level) c.num_res_blocks = res_in_level;
      first_level = false;
      res_in_level = 0;
      c.channels.push_back(w[0] / 8);
    } else {
      break;
    }
  }
  if (first_level) c.num_res_blocks = res_in_level;
  c.out_channels = need("out_layer.2.weight")[0];
  check_ss_decoder_config(c, where);
  const auto want = ss_decoder_tensor_shapes(c);
  for (const auto& [name, shape] : want) {
    auto it = shapes.find(name);
    if (it == shapes.end()) throw Error("tensor '" + name + "' is missing", where, "the checkpoint is incomplete or of another model");
    if (it->second != shape)
      throw Error("tensor '" + name + "' has shape " + shape_json(it->second) + ", the model's other tensors imply " + shape_json(shape), where);
  }
  for (const auto& [name, shape] : shapes)
    if (!want.count(name))
      throw Error("unexpected tensor '" + name + "' for a SparseStructureDecoder of channels " + json(c.channels).dump(), where,
                  "a stage holds exactly the decoder's state dict");
  return c;
}

std::map<std::string, std::vector<float>> synth_ss_decoder_weights(const SsDecoderConfig& c, uint64_t seed) {
  SynthGaussian gauss(seed);
  std::map<std::string, std::vector<float>> w;
  for (const auto& [name, shape] : ss_decoder_tensor_shapes(c)) {  // sorted: the stream is fixed by the names
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    std::vector<float> v(n);
    const bool is_norm = name.find("norm") != std::string::npos || name.rfind("out_layer.0.", 0) == 0;
    if (shape.size() == 5) {
      const float fan_in = float(shape[1] * 27);
      const float var = (name.find(".conv2.") != std::string::npos ? 0.25f : 1.0f) / fan_in;
      for (auto& x : v) x = gauss(0.0f, std::sqrt(var));
    } else if (is_norm && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) {
      for (auto& x : v) x = gauss(1.0f, 0.1f);
    } else {
      for (auto& x : v) x = gauss(0.0f, 0.02f);
    }
    w[name] = std::move(v);
  }
  return w;
}

}  // namespace ember::formats
