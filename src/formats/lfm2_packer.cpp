#include "formats/lfm2_packer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <map>
#include <memory>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/lfm2_checkpoint.h"
#include "formats/llm_pack.h"
#include "formats/q4_quantize.h"
#include "formats/safetensors.h"

namespace ember::formats {
namespace fs = std::filesystem;
namespace {

std::string dims(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// All tensors of a checkpoint that may be split over several safetensors files.
class Checkpoint {
 public:
  explicit Checkpoint(const fs::path& dir) {
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".safetensors") paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    if (paths.empty()) throw Error("no *.safetensors files", dir.string(), "point --from at a Hugging Face model directory");
    for (const auto& p : paths) {
      files_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(p)));
      for (const auto& [name, info] : files_.back()->tensors()) {
        if (by_name_.count(name))
          throw Error("tensor '" + name + "' appears in two files", p.string() + " and " + by_name_[name]->path().string());
        by_name_[name] = files_.back().get();
      }
    }
  }
  bool has(const std::string& name) const { return by_name_.count(name) > 0; }
  const TensorInfo& info(const std::string& name) const { return by_name_.at(name)->info(name); }
  std::vector<float> f32(const std::string& name) const { return by_name_.at(name)->to_f32(name); }
  std::string where(const std::string& name) const { return by_name_.at(name)->path().filename().string() + ": tensor '" + name + "'"; }
  const std::map<std::string, const SafetensorsFile*>& all() const { return by_name_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> by_name_;
};

int64_t dim_or(const Checkpoint& ck, const std::string& name, size_t axis, int64_t fallback) {
  if (!ck.has(name)) return fallback;
  const auto& s = ck.info(name).shape;
  return axis < s.size() ? s[axis] : fallback;
}

// The pack shape from the tensors, checked against config.json; every disagreement, missing
// tensor or wrong shape is collected before anything is quantized.
LlmShape derive_shape(const Checkpoint& ck, Lfm2Config& cfg, Problems& p) {
  auto disagree = [&](const std::string& field, int64_t config, int64_t tensors, const std::string& from) {
    if (config != tensors)
      p.add({"config.json", field, std::nullopt, "disagrees with the tensor shapes (" + from + ")", std::to_string(config), std::to_string(tensors)});
  };
  const int64_t hidden = dim_or(ck, "model.embed_tokens.weight", 1, cfg.hidden_size);
  const int64_t vocab = dim_or(ck, "model.embed_tokens.weight", 0, cfg.vocab_size);
  disagree("hidden_size", cfg.hidden_size, hidden, "model.embed_tokens.weight");
  disagree("vocab_size", cfg.vocab_size, vocab, "model.embed_tokens.weight");
  cfg.hidden_size = hidden;
  cfg.vocab_size = vocab;
  const int64_t ffn = dim_or(ck, "model.layers.0.feed_forward.w1.weight", 0, cfg.ffn());
  if (ffn != cfg.ffn())
    p.add({"config.json", "intermediate_size", std::nullopt,
           "the MLP width of the tensors disagrees with the block_auto_adjust_ff_dim rule (int(2*" + std::to_string(cfg.intermediate_size) +
               "/3) x multiplier, rounded up to " + std::to_string(cfg.block_multiple_of) + ")",
           std::to_string(cfg.ffn()), std::to_string(ffn)});
  for (size_t i = 0; i < cfg.layer_types.size(); i++) {
    if (cfg.layer_types[i] != LayerType::Attention) continue;
    const std::string a = "model.layers." + std::to_string(i) + ".self_attn.";
    const int64_t d = dim_or(ck, a + "q_layernorm.weight", 0, cfg.head_dim);
    disagree("head_dim", cfg.head_dim, d, a + "q_layernorm.weight");
    cfg.head_dim = d;
    if (d > 0) {
      disagree("num_attention_heads", cfg.num_attention_heads, dim_or(ck, a + "q_proj.weight", 0, cfg.num_attention_heads * d) / d, a + "q_proj.weight");
      disagree("num_key_value_heads", cfg.num_key_value_heads, dim_or(ck, a + "k_proj.weight", 0, cfg.num_key_value_heads * d) / d, a + "k_proj.weight");
    }
    break;
  }
  if (cfg.conv_bias) p.add({"config.json", "conv_bias", std::nullopt, "conv biases are not supported by the pack format", "false", "true"});

  std::map<std::string, bool> expected;
  for (const HfTensorSpec& s : lfm2_tensor_specs(cfg, ffn)) {
    expected[s.name] = true;
    if (!ck.has(s.name)) {
      p.add({"checkpoint", "tensor '" + s.name + "'", std::nullopt, "missing", dims(s.shape), "nothing"});
      continue;
    }
    const TensorInfo& t = ck.info(s.name);
    if (t.shape != s.shape) p.add({"checkpoint", ck.where(s.name), std::nullopt, "wrong shape", dims(s.shape), dims(t.shape)});
    if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
      p.add({"checkpoint", ck.where(s.name), std::nullopt, "unsupported dtype", "F32, F16 or BF16", dtype_name(t.dtype)});
  }
  for (const auto& [name, file] : ck.all()) {
    if (expected.count(name)) continue;
    if (name == "lm_head.weight" && !cfg.tie_word_embeddings)
      p.add({"checkpoint", "tensor 'lm_head.weight'", std::nullopt, "untied output head: the pack ties head and embedding", "tie_word_embeddings", "a separate lm_head"});
    else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0)
      p.add({"checkpoint", "tensor '" + name + "'", std::nullopt, "biases are not supported by the pack format", "no bias", "a bias"});
  }
  LlmShape s;
  s.layer_types = cfg.layer_types;
  s.hidden = hidden;
  s.ffn = ffn;
  s.vocab = vocab;
  s.heads = cfg.num_attention_heads;
  s.kv_heads = cfg.num_key_value_heads;
  s.head_dim = cfg.head_dim;
  s.conv_cache = cfg.conv_L_cache;
  s.norm_eps = cfg.norm_eps;
  s.rope_theta = cfg.rope_theta;
  if (hidden % 32 || ffn % 32 || (s.heads * s.head_dim) % 32)
    p.add({"checkpoint", "shape", std::nullopt, "4-bit blocks of 32 need hidden, ffn and heads*head_dim to be multiples of 32",
           "multiples of 32", std::to_string(hidden) + ", " + std::to_string(ffn) + ", " + std::to_string(s.heads * s.head_dim)});
  return s;
}

std::vector<float> concat_rows(std::vector<std::vector<float>> parts) {
  std::vector<float> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Geometry geometry(int64_t wg, int64_t rows_per_subgroup) { return {wg, 32, rows_per_subgroup, 1, OrderedJson::object()}; }

}  // namespace

void rope_tables(double theta, int64_t head_dim, int64_t positions, std::vector<float>& cos, std::vector<float>& sin) {
  const int64_t half = head_dim / 2;
  cos.assign(static_cast<size_t>(positions * half), 0.0f);
  sin.assign(cos.size(), 0.0f);
  for (int64_t i = 0; i < half; i++) {
    // transformers: inv_freq = 1 / base ** (arange(0, dim, 2).float() / dim), all in f32.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    const float inv_freq = 1.0f / static_cast<float>(std::pow(theta, static_cast<double>(exponent)));
    for (int64_t p = 0; p < positions; p++) {
      const float angle = static_cast<float>(p) * inv_freq;
      cos[static_cast<size_t>(p * half + i)] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sin[static_cast<size_t>(p * half + i)] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
}

RuntimeFile default_runtime_file(const LlmShape& shape, int64_t max_positions, int64_t max_total_positions) {
  RuntimeFile f;
  Runtime& r = f.runtime;
  r.shape = shape;
  r.max_queries = 1;
  r.max_positions = max_positions;
  r.sample_partials = 256;
  r.plan_position = std::min<int64_t>(1024, max_positions);
  r.max_total_positions = std::min(max_total_positions, max_positions);
  // Untuned geometries: the seed's knee (`ember tune` replaces them with measured ones).
  r.knee = {{"attn_o_proj", geometry(128, 1), {}}, {"mlp_down", geometry(128, 1), {}}, {"attn_qkv", geometry(128, 1), {}},
            {"conv_in_proj", geometry(128, 4), {}}, {"mlp_gate_up", geometry(128, 1), {}}, {"head", geometry(128, 4), {}},
            {"conv_out_proj", geometry(128, 1), {}}};
  for (auto& k : r.knee) k.extra = OrderedJson::object();
  r.dequant_variant = "carried";
  r.flash_optima = {{r.max_total_positions, 16, OrderedJson::object()}};
  r.power_preference = "high-performance";
  r.expected_subgroup_size = 0;  // not tuned for any adapter
  Candidate& c = f.candidate;
  f.has_candidate = true;
  c.key = "default";
  c.flash = false;
  c.unfused = false;
  c.flash_mode = "subgroup";
  c.mlp_mode = "subgroup";
  c.mlp_pair = false;  // down.quant is the down weight
  c.mlp_half_dot = "none";
  c.mlp_half_product = "none";
  return f;
}

OutputKind llm_pack_output() {
  return {"LLM runtime pack", true, [](const fs::path& dir) {
            static const std::set<std::string> kFiles = {"runtime.json", "weights.bin", "tokenizer.json", "tokenizer_config.json",
                                                         "runtime.json.bak"};
            for (const auto& e : fs::directory_iterator(dir))
              if (!kFiles.count(e.path().filename().string())) return false;
            return fs::is_regular_file(dir / "runtime.json") && fs::is_regular_file(dir / "weights.bin");
          }};
}

Lfm2PackReport pack_lfm2(const fs::path& hf_dir, const OutputTarget& out, const Lfm2PackOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
  OutputTarget target = out;
  target.kind = llm_pack_output();
  target.inputs.emplace_back("--from", hf_dir);
  check_output(target);  // before the checkpoint is read
  const fs::path& out_dir = out.path;
  std::ostream* log = opts.log;
  const fs::path config_path = hf_dir / "config.json";
  if (!fs::is_regular_file(config_path)) throw Error("config.json not found", hf_dir.string(), "point --from at a Hugging Face model directory");
  const fs::path tokenizer_path = hf_dir / "tokenizer.json";
  if (!fs::is_regular_file(tokenizer_path))
    throw Error("tokenizer.json not found", hf_dir.string(), "the pack needs the model's Hugging Face tokenizer.json");
  Lfm2Config cfg = parse_lfm2_config(parse_json_text(read_file(config_path), config_path.string()), config_path.string());
  Checkpoint ck(hf_dir);
  // A NaN or Inf would quantize into a pack that loads and then prints garbage: refused here.
  auto tensor = [&](const std::string& name) {
    std::vector<float> v = ck.f32(name);
    for (size_t i = 0; i < v.size(); i++)
      if (!std::isfinite(v[i]))
        throw Error("non-finite value (" + std::string(std::isnan(v[i]) ? "NaN" : "Inf") + ") at flat index " + std::to_string(i), ck.where(name),
                    "the checkpoint is damaged; download or export it again");
    return v;
  };

  Problems problems;
  Lfm2PackReport report;
  report.shape = derive_shape(ck, cfg, problems);
  problems.throw_if_any("cannot pack this checkpoint", hf_dir.string(), "the checkpoint does not match an LFM2 model");
  const LlmShape& shape = report.shape;
  const int64_t max_positions = std::min(cfg.max_position_embeddings, opts.max_positions_cap);
  report.layout = llm_layout(shape, max_positions);
  const LlmLayout& layout = report.layout;
  std::vector<uint8_t> weights(layout.weight_bytes, 0);
  auto put = [&](const std::string& section, std::span<const uint8_t> bytes) {
    const SectionSpec* s = layout.find(section);
    if (!s || s->bytes != bytes.size())
      throw Error("internal: section '" + section + "' size " + std::to_string(bytes.size()) + " does not match the layout", "packer");
    std::memcpy(weights.data() + s->offset, bytes.data(), bytes.size());
  };
  auto put_f32 = [&](const std::string& section, const std::vector<float>& v) {
    put(section, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
  };
  auto note = [&](const std::string& section, int64_t rows, int64_t cols, const char* enc, double err) {
    report.matrices.push_back({section, rows, cols, enc, err});
    if (log) {
      char line[256];
      snprintf(line, sizeof line, "  [%3zu] %-24s %6lld x %-6lld %-14s rel_l2 %.4f\n", report.matrices.size(), section.c_str(),
               static_cast<long long>(rows), static_cast<long long>(cols), enc, err);
      *log << line << std::flush;
    }
  };
  auto symmetric = [&](const std::string& name, const std::vector<float>& w, int64_t rows, int64_t cols) {
    Q4Matrix q = quantize_q4_symmetric(w, rows, cols);
    put(name + ".quant", q.quant_bytes());
    put(name + ".scales", q.scale_bytes());
    note(name, rows, cols, "q4 symmetric", relative_l2(dequantize_q4_symmetric(q.quant_bytes(), q.scale_bytes(), rows, cols), w));
  };

  if (log) *log << "packing " << hf_dir.string() << ": " << shape.layers() << " layers, hidden " << shape.hidden << ", ffn " << shape.ffn
                << ", vocab " << shape.vocab << " -> " << layout.weight_bytes << " bytes\n";
  const int64_t H = shape.hidden, F = shape.ffn;
  for (int i = 0; i < shape.layers(); i++) {
    const std::string hf = "model.layers." + std::to_string(i) + ".";
    const std::string p = layer_prefix(i);
    if (shape.layer_types[i] == LayerType::Conv) {
      symmetric(p + "conv.in_proj", tensor(hf + "conv.in_proj.weight"), 3 * H, H);
      symmetric(p + "conv.out_proj", tensor(hf + "conv.out_proj.weight"), H, H);
      put_f32(p + "conv.in_proj.norm", tensor(hf + "operator_norm.weight"));
      put_f32(p + "conv.core.taps", tensor(hf + "conv.conv.weight"));  // [H][1][L] = [H][L], tap L-1 = current token
    } else {
      std::vector<float> qkv = concat_rows({tensor(hf + "self_attn.q_proj.weight"), tensor(hf + "self_attn.k_proj.weight"),
                                            tensor(hf + "self_attn.v_proj.weight")});
      symmetric(p + "attn.qkv", qkv, shape.qkv_rows(), H);
      symmetric(p + "attn.o_proj", tensor(hf + "self_attn.out_proj.weight"), H, shape.q_rows());
      put_f32(p + "attn.qkv.norm", tensor(hf + "operator_norm.weight"));
      put_f32(p + "attn.qkv.q_norm", tensor(hf + "self_attn.q_layernorm.weight"));
      put_f32(p + "attn.qkv.k_norm", tensor(hf + "self_attn.k_layernorm.weight"));
    }
    symmetric(p + "mlp.gate_up", concat_rows({tensor(hf + "feed_forward.w1.weight"), tensor(hf + "feed_forward.w3.weight")}), 2 * F, H);
    std::vector<float> down = tensor(hf + "feed_forward.w2.weight");
    symmetric(p + "mlp.down", down, H, F);
    Q4Matrix k = quantize_q4_kmajor(down, H, F);
    put(p + "mlp.down.kquant", k.quant_bytes());
    put(p + "mlp.down.kscales", k.scale_bytes());
    note(p + "mlp.down.kquant", H, F, "q4 k-major", relative_l2(dequantize_q4_kmajor(k.quant_bytes(), k.scale_bytes(), H, F), down));
    put_f32(p + "mlp.gate_up.norm", tensor(hf + "ffn_norm.weight"));
  }
  {
    std::vector<float> embed = tensor("model.embed_tokens.weight");
    Q4Matrix q = quantize_q4_asymmetric(embed, shape.vocab, H);
    put("head.quant", q.quant_bytes());
    put("head.scales", q.scale_bytes());
    put("head.zero_points", q.zero_point_bytes());
    note("head", shape.vocab, H, "q4 asymmetric",
         relative_l2(dequantize_q4_asymmetric(q.quant_bytes(), q.scale_bytes(), q.zero_point_bytes(), shape.vocab, H), embed));
  }
  put_f32("head.norm", tensor("model.embedding_norm.weight"));
  std::vector<float> cos, sin;
  rope_tables(cfg.rope_theta, shape.head_dim, max_positions, cos, sin);
  put_f32("rope.cos_ext", cos);
  put_f32("rope.sin_ext", sin);
  const size_t short_len = static_cast<size_t>(std::min(kRopeShortPositions, max_positions) * (shape.head_dim / 2));
  put_f32("rope.cos", std::vector<float>(cos.begin(), cos.begin() + static_cast<std::ptrdiff_t>(short_len)));
  put_f32("rope.sin", std::vector<float>(sin.begin(), sin.begin() + static_cast<std::ptrdiff_t>(short_len)));

  RuntimeFile rf = default_runtime_file(shape, max_positions, opts.max_total_positions);
  rf.runtime.weight_bytes = layout.weight_bytes;
  for (const SectionSpec& s : layout.sections) rf.runtime.sections.push_back({s.name, s.offset, s.bytes, OrderedJson::object()});
  const fs::path tokenizer_config = hf_dir / "tokenizer_config.json";

  write_output_directory(target, [&](const fs::path& tmp) {
    write_file_atomic(tmp / "weights.bin", weights);
    write_file_atomic(tmp / "runtime.json", to_json(rf).dump(2) + "\n");
    write_file_atomic(tmp / "tokenizer.json", read_file(tokenizer_path));
    if (fs::is_regular_file(tokenizer_config)) write_file_atomic(tmp / "tokenizer_config.json", read_file(tokenizer_config));
    // The pack must pass its own validator before it replaces anything.
    check_llm_pack(tmp).problems.throw_if_any("internal: the written pack does not validate", out_dir.string(), "report this as a bug");
  });
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (log) *log << "wrote " << out_dir.string() << " in " << report.seconds << " s\n";
  return report;
}

}  // namespace ember::formats
