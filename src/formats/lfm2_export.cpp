#include "formats/lfm2_export.h"

#include <cmath>
#include <cstring>

#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/lfm2_packer.h"
#include "formats/lfm2_synth.h"
#include "formats/safetensors.h"

namespace ember::formats {
namespace fs = std::filesystem;
namespace {

int64_t rope_rows(const LlmPack& pack) {
  return static_cast<int64_t>(pack.f32_section("rope.cos_ext").size() / static_cast<size_t>(pack.shape().head_dim / 2));
}

// theta from the slowest frequency of the tables: angle(p, i) = p / theta^(2i/D), read at the
// last position (largest angle, still far below 2 pi for the slowest frequency). An integer
// theta (as every released model has) is recovered exactly by the rounding.
double estimate_rope_theta(const LlmPack& pack) {
  const int64_t half = pack.shape().head_dim / 2, rows = rope_rows(pack);
  if (half < 2 || rows < 2) return 1000000.0;  // too little to tell: transformers' LFM2 default
  const int64_t i = half - 1, p = rows - 1;
  auto cos = pack.f32_section("rope.cos_ext"), sin = pack.f32_section("rope.sin_ext");
  const double angle = std::atan2(sin[static_cast<size_t>(p * half + i)], cos[static_cast<size_t>(p * half + i)]);
  const double inv_freq = angle / static_cast<double>(p);
  return std::round(std::pow(inv_freq, -static_cast<double>(pack.shape().head_dim) / static_cast<double>(2 * i)));
}

double rope_table_error(const LlmPack& pack, double theta) {
  std::vector<float> cos, sin;
  rope_tables(theta, pack.shape().head_dim, rope_rows(pack), cos, sin);
  auto pc = pack.f32_section("rope.cos_ext"), ps = pack.f32_section("rope.sin_ext");
  double err = 0;
  for (size_t k = 0; k < cos.size(); k++)
    err = std::max({err, std::fabs(static_cast<double>(cos[k]) - pc[k]), std::fabs(static_cast<double>(sin[k]) - ps[k])});
  return err;
}

TensorToWrite f32_tensor(const std::string& name, std::vector<int64_t> shape, std::span<const float> values) {
  TensorToWrite t{name, DType::F32, std::move(shape), std::vector<uint8_t>(values.size() * 4)};
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

}  // namespace

Lfm2Config lfm2_config_of(const LlmPack& pack, double rope_theta) {
  const LlmShape& s = pack.shape();
  if (s.heads <= 0 || s.hidden / s.heads != s.head_dim)
    throw Error("headDim " + std::to_string(s.head_dim) + " is not hidden / heads (" + std::to_string(s.hidden) + " / " +
                    std::to_string(s.heads) + ")",
                pack.dir().string() + ": runtime.json shape", "transformers' LFM2 derives the head size from hidden_size / num_attention_heads");
  Lfm2Config c;
  c.layer_types = s.layer_types;
  c.hidden_size = s.hidden;
  c.intermediate_size = s.ffn;
  c.block_auto_adjust_ff_dim = false;  // the width as stored, no 2/3 rule
  c.num_attention_heads = s.heads;
  c.num_key_value_heads = s.kv_heads;
  c.head_dim = s.head_dim;
  c.vocab_size = s.vocab;
  c.conv_L_cache = s.conv_cache;
  c.norm_eps = s.eps();
  c.rope_theta = rope_theta;
  c.max_position_embeddings = rope_rows(pack);
  c.tie_word_embeddings = true;
  return c;
}

Lfm2ExportReport export_lfm2_checkpoint(const LlmPack& pack, const OutputTarget& out, const std::string& down_copy) {
  OutputTarget target = out;
  target.kind = lfm2_checkpoint_output();
  target.inputs.emplace_back("--model", pack.dir());
  check_output(target);
  Lfm2ExportReport report;
  report.down_copy = down_copy.empty() ? pack.candidate().down_copy() : down_copy;
  if (report.down_copy != "quant" && report.down_copy != "kquant")
    throw Error("unknown down copy '" + report.down_copy + "'", "--down", "use quant or kquant");
  const LlmShape& s = pack.shape();
  report.rope_estimated = !s.rope_theta.has_value();
  report.rope_theta = s.rope_theta ? *s.rope_theta : estimate_rope_theta(pack);
  report.rope_table_error = rope_table_error(pack, report.rope_theta);
  const Lfm2Config config = lfm2_config_of(pack, report.rope_theta);

  const int64_t H = s.hidden, F = s.ffn, Q = s.q_rows(), KV = s.kv_rows();
  auto f32 = [&](const std::string& section) { return pack.f32_section(section); };
  auto rows = [](const std::vector<float>& m, int64_t cols, int64_t first, int64_t count) {
    return std::span<const float>(m).subspan(static_cast<size_t>(first * cols), static_cast<size_t>(count * cols));
  };
  std::vector<TensorToWrite> tensors;
  for (const HfTensorSpec& spec : lfm2_tensor_specs(config, F)) {
    const std::string& n = spec.name;
    if (n == "model.embed_tokens.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, pack.dequantize("head")));
      continue;
    }
    if (n == "model.embedding_norm.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, f32("head.norm")));
      continue;
    }
    // model.layers.<i>.<rest>
    const size_t dot = n.find('.', 13);
    const int i = std::stoi(n.substr(13, dot - 13));
    const std::string rest = n.substr(dot + 1), L = layer_prefix(i);
    const bool attn = s.layer_types[static_cast<size_t>(i)] == LayerType::Attention;
    const std::string mix = L + (attn ? "attn.qkv" : "conv.in_proj");
    if (rest == "operator_norm.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, f32(mix + ".norm")));
    } else if (rest == "ffn_norm.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, f32(L + "mlp.gate_up.norm")));
    } else if (rest == "feed_forward.w1.weight" || rest == "feed_forward.w3.weight") {
      auto gate_up = pack.dequantize(L + "mlp.gate_up");  // rows: gate (w1), then up (w3)
      tensors.push_back(f32_tensor(n, spec.shape, rows(gate_up, H, rest == "feed_forward.w1.weight" ? 0 : F, F)));
    } else if (rest == "feed_forward.w2.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, pack.dequantize(L + "mlp.down", report.down_copy)));  // [H][F] either copy
    } else if (rest == "conv.in_proj.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, pack.dequantize(L + "conv.in_proj")));
    } else if (rest == "conv.out_proj.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, pack.dequantize(L + "conv.out_proj")));
    } else if (rest == "conv.conv.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, f32(L + "conv.core.taps")));  // [H][L] = [H][1][L]
    } else if (rest == "self_attn.q_proj.weight" || rest == "self_attn.k_proj.weight" || rest == "self_attn.v_proj.weight") {
      auto qkv = pack.dequantize(L + "attn.qkv");  // rows: q, k, v
      const int64_t first = rest[10] == 'q' ? 0 : rest[10] == 'k' ? Q : Q + KV;
      tensors.push_back(f32_tensor(n, spec.shape, rows(qkv, H, first, rest[10] == 'q' ? Q : KV)));
    } else if (rest == "self_attn.out_proj.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, pack.dequantize(L + "attn.o_proj")));
    } else if (rest == "self_attn.q_layernorm.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, f32(L + "attn.qkv.q_norm")));
    } else if (rest == "self_attn.k_layernorm.weight") {
      tensors.push_back(f32_tensor(n, spec.shape, f32(L + "attn.qkv.k_norm")));
    } else {
      throw Error("internal: no pack section for tensor '" + n + "'", "lfm2_export");
    }
  }
  report.tensors = tensors.size();
  for (const auto& t : tensors) report.bytes += t.bytes.size();

  const fs::path tokenizer = pack.tokenizer_path(), tokenizer_config = pack.dir() / "tokenizer_config.json";
  write_output_directory(target, [&](const fs::path& tmp) {
    write_file_atomic(tmp / "config.json", to_json(config, "float32").dump(2) + "\n");
    write_safetensors(tmp / "model.safetensors", tensors,
                      {{"format", "pt"}, {"ember_down_copy", "mlp.down." + report.down_copy}, {kEmberOutputKey, kLfm2CheckpointId}});
    write_file_atomic(tmp / "tokenizer.json", read_file(tokenizer));
    if (fs::is_regular_file(tokenizer_config)) write_file_atomic(tmp / "tokenizer_config.json", read_file(tokenizer_config));
  });
  return report;
}

}  // namespace ember::formats
