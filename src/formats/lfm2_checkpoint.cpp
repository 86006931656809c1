#include "formats/lfm2_checkpoint.h"

#include "common/error.h"

namespace ember::formats {
namespace {

int64_t need_int(const OrderedJson& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer())
    throw Error(std::string("config field '") + key + "' is missing or not an integer", where, "is this an LFM2 config.json?");
  return it->get<int64_t>();
}

template <typename T>
T opt(const OrderedJson& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->get<T>();
}

}  // namespace

int64_t Lfm2Config::ffn() const {
  int64_t f = intermediate_size;
  if (block_auto_adjust_ff_dim) {
    f = 2 * f / 3;  // int(2 * intermediate_size / 3) for positive sizes
    // transformers' Lfm2MLP rounds up to block_multiple_of only together with the multiplier
    // (an explicit null multiplier keeps the 2/3 width as it is).
    if (block_ffn_dim_multiplier) {
      f = static_cast<int64_t>(*block_ffn_dim_multiplier * static_cast<double>(f));
      f = block_multiple_of * ((f + block_multiple_of - 1) / block_multiple_of);
    }
  }
  return f;
}

Lfm2Config parse_lfm2_config(const OrderedJson& j, const std::string& where) {
  if (!j.is_object()) throw Error("config.json is not a JSON object", where);
  if (j.value("model_type", std::string()) != "lfm2")
    throw Error("model_type is '" + j.value("model_type", std::string("(none)")) + "', not 'lfm2'", where,
                "ember pack lfm2 reads LiquidAI LFM2 checkpoints");
  Lfm2Config c;
  try {
    c.hidden_size = need_int(j, "hidden_size", where);
    // transformers' Lfm2Config takes block_ff_dim (the released files' original key) over
    // intermediate_size: LFM2-1.2B's config.json has intermediate_size 8192 (the width after the
    // 2/3 rule) beside block_ff_dim 12288, from which the rule gives that 8192.
    c.intermediate_size = j.contains("block_ff_dim") ? need_int(j, "block_ff_dim", where) : need_int(j, "intermediate_size", where);
    c.num_attention_heads = need_int(j, "num_attention_heads", where);
    c.num_key_value_heads = need_int(j, "num_key_value_heads", where);
    c.vocab_size = need_int(j, "vocab_size", where);
    c.block_auto_adjust_ff_dim = opt<bool>(j, "block_auto_adjust_ff_dim", true);
    // Absent means transformers' default, 1.0; only an explicit null turns the multiplier off.
    if (!j.contains("block_ffn_dim_multiplier")) c.block_ffn_dim_multiplier = 1.0;
    else if (!j["block_ffn_dim_multiplier"].is_null()) c.block_ffn_dim_multiplier = j["block_ffn_dim_multiplier"].get<double>();
    c.block_multiple_of = opt<int64_t>(j, "block_multiple_of", 256);
    c.head_dim = opt<int64_t>(j, "head_dim", c.num_attention_heads ? c.hidden_size / c.num_attention_heads : 0);
    c.conv_L_cache = opt<int64_t>(j, "conv_L_cache", 3);
    c.conv_bias = opt<bool>(j, "conv_bias", false);
    c.norm_eps = opt<double>(j, "norm_eps", 1e-5);
    // Older files: rope_theta; newer: rope_parameters.rope_theta.
    if (j.contains("rope_parameters") && j["rope_parameters"].is_object() && j["rope_parameters"].contains("rope_theta"))
      c.rope_theta = j["rope_parameters"]["rope_theta"].get<double>();
    else
      c.rope_theta = opt<double>(j, "theta", opt<double>(j, "rope_theta", 1000000.0));
    c.max_position_embeddings = opt<int64_t>(j, "max_position_embeddings", 128000);
    c.tie_word_embeddings = opt<bool>(j, "tie_embedding", opt<bool>(j, "tie_word_embeddings", true));  // the original key first, as transformers
    if (j.contains("layer_types")) {
      for (const auto& t : j["layer_types"]) {
        std::string s = t.get<std::string>();
        if (s == "conv") c.layer_types.push_back(LayerType::Conv);
        else if (s == "full_attention" || s == "attention") c.layer_types.push_back(LayerType::Attention);
        else throw Error("unknown layer type '" + s + "' in layer_types", where, "LFM2 layers are \"conv\" or \"full_attention\"");
      }
    } else if (j.contains("full_attn_idxs")) {  // early LFM2 configs
      int64_t n = need_int(j, "num_hidden_layers", where);
      c.layer_types.assign(static_cast<size_t>(n), LayerType::Conv);
      for (const auto& i : j["full_attn_idxs"]) c.layer_types.at(i.get<size_t>()) = LayerType::Attention;
    } else {
      throw Error("config has neither layer_types nor full_attn_idxs", where, "is this an LFM2 config.json?");
    }
    if (j.contains("num_hidden_layers") && need_int(j, "num_hidden_layers", where) != static_cast<int64_t>(c.layer_types.size()))
      throw Error("num_hidden_layers disagrees with layer_types (" + std::to_string(c.layer_types.size()) + " entries)", where);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("config field has the wrong type: ") + e.what(), where);
  }
  return c;
}

OrderedJson to_json(const Lfm2Config& c, const std::string& torch_dtype) {
  OrderedJson types = OrderedJson::array();
  for (LayerType t : c.layer_types) types.push_back(t == LayerType::Conv ? "conv" : "full_attention");
  OrderedJson j = {{"architectures", {"Lfm2ForCausalLM"}},
                   {"model_type", "lfm2"},
                   {"hidden_size", c.hidden_size},
                   {"intermediate_size", c.intermediate_size},
                   {"block_auto_adjust_ff_dim", c.block_auto_adjust_ff_dim},
                   {"block_multiple_of", c.block_multiple_of},
                   {"num_attention_heads", c.num_attention_heads},
                   {"num_key_value_heads", c.num_key_value_heads},
                   {"num_hidden_layers", c.layer_types.size()},
                   {"layer_types", types},
                   {"conv_L_cache", c.conv_L_cache},
                   {"conv_bias", c.conv_bias},
                   {"norm_eps", c.norm_eps},
                   {"rope_theta", c.rope_theta},
                   {"max_position_embeddings", c.max_position_embeddings},
                   {"vocab_size", c.vocab_size},
                   {"tie_word_embeddings", c.tie_word_embeddings},
                   {"pad_token_id", 0},
                   {"bos_token_id", 1},
                   {"eos_token_id", 4},
                   {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", c.rope_theta}}},
                   // transformers 5 reads "dtype" (and loads in it by default: a bf16 file's
                   // config makes a bf16 model); "torch_dtype" is its older name.
                   {"dtype", torch_dtype},
                   {"torch_dtype", torch_dtype},
                   {"use_cache", true}};
  // Absent reads as 1.0 (transformers' default), so "off" must be written as null.
  j["block_ffn_dim_multiplier"] = c.block_ffn_dim_multiplier ? OrderedJson(*c.block_ffn_dim_multiplier) : OrderedJson(nullptr);
  return j;
}

Lfm2Config lfm2_preset(const std::string& name) {
  Lfm2Config c;
  const LayerType C = LayerType::Conv, A = LayerType::Attention;
  if (name == "seed") {  // seed 000: 14 layers, hidden 1024, ffn 2560, vocab 65536
    c.layer_types = {C, C, A, C, A, C, A, C, A, C, A, C, A, C};
    c.hidden_size = 1024;
    c.intermediate_size = 3840;  // int(2*3840/3) = 2560, already a multiple of 256
    c.block_ffn_dim_multiplier = 1.0;
    c.block_multiple_of = 256;
    c.num_attention_heads = 16;
    c.num_key_value_heads = 8;
    c.vocab_size = 65536;
    c.max_position_embeddings = 128000;
  } else if (name == "tiny") {
    c.layer_types = {C, A, C, A};
    c.hidden_size = 64;
    c.intermediate_size = 192;  // int(2*192/3) = 128
    c.block_ffn_dim_multiplier = 1.0;
    c.block_multiple_of = 32;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.vocab_size = 512;
    c.max_position_embeddings = 512;
  } else {
    throw Error("unknown shape preset '" + name + "'", "--shape", "use seed or tiny");
  }
  c.head_dim = c.hidden_size / c.num_attention_heads;
  return c;
}

std::vector<HfTensorSpec> lfm2_tensor_specs(const Lfm2Config& c, int64_t ffn) {
  const int64_t H = c.hidden_size, F = ffn > 0 ? ffn : c.ffn(), D = c.head_dim;
  std::vector<HfTensorSpec> out;
  out.push_back({"model.embed_tokens.weight", {c.vocab_size, H}, HfTensorSpec::Embedding});
  out.push_back({"model.embedding_norm.weight", {H}, HfTensorSpec::Norm});
  for (size_t i = 0; i < c.layer_types.size(); i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    out.push_back({p + "operator_norm.weight", {H}, HfTensorSpec::Norm});
    out.push_back({p + "ffn_norm.weight", {H}, HfTensorSpec::Norm});
    out.push_back({p + "feed_forward.w1.weight", {F, H}, HfTensorSpec::Matrix});
    out.push_back({p + "feed_forward.w3.weight", {F, H}, HfTensorSpec::Matrix});
    out.push_back({p + "feed_forward.w2.weight", {H, F}, HfTensorSpec::Matrix});
    if (c.layer_types[i] == LayerType::Conv) {
      out.push_back({p + "conv.in_proj.weight", {3 * H, H}, HfTensorSpec::Matrix});
      out.push_back({p + "conv.out_proj.weight", {H, H}, HfTensorSpec::Matrix});
      out.push_back({p + "conv.conv.weight", {H, 1, c.conv_L_cache}, HfTensorSpec::ConvTaps});
    } else {
      out.push_back({p + "self_attn.q_proj.weight", {c.num_attention_heads * D, H}, HfTensorSpec::Matrix});
      out.push_back({p + "self_attn.k_proj.weight", {c.num_key_value_heads * D, H}, HfTensorSpec::Matrix});
      out.push_back({p + "self_attn.v_proj.weight", {c.num_key_value_heads * D, H}, HfTensorSpec::Matrix});
      out.push_back({p + "self_attn.out_proj.weight", {H, c.num_attention_heads * D}, HfTensorSpec::Matrix});
      out.push_back({p + "self_attn.q_layernorm.weight", {D}, HfTensorSpec::Norm});
      out.push_back({p + "self_attn.k_layernorm.weight", {D}, HfTensorSpec::Norm});
    }
  }
  return out;
}

}  // namespace ember::formats
