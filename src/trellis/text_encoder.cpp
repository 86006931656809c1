// CLIP's text model (transformers' CLIPTextModel) on the GPU, module by module as
// docs/trellis-text-encoder.md states it:
//   text_model.embeddings            token_embedding[id] + position_embedding[position] (a host gather
//                                    of the needed rows: 77 of them, dequantized exactly as the GPU would)
//   text_model.encoder.layers.N      h = x + self_attn.out_proj(attention(layer_norm1(x)), causal)
//                                    x = h + mlp.fc2(quick_gelu(mlp.fc1(layer_norm2(h))))
//   text_model.final_layer_norm      last_hidden_state
// q_proj, k_proj and v_proj run as one matmul over their stacked rows. No padding mask: TRELLIS
// passes only the ids, so padded positions attend like any other (causally).
#include "trellis/text_encoder.h"

#include <cstring>

#include "common/error.h"
#include "formats/safetensors.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "kernels/flash_attention.h"
#include "kernels/flow_elementwise.h"
#include "kernels/layer_norm.h"
#include "kernels/qmatmul.h"
#include "tokenizer/tokenizer.h"
#include "trellis/clip_checkpoint.h"
#include "trellis/ss_flow_stage.h"
#include "trellis/stage_upload.h"

namespace ember::trellis {
namespace fs = std::filesystem;

std::vector<std::vector<int32_t>> clip_tokenize(const llm::Tokenizer& tok, const std::vector<std::string>& prompts,
                                                int context_length, std::vector<bool>* truncated) {
  std::vector<std::vector<int32_t>> out;
  if (truncated) truncated->clear();
  for (const auto& p : prompts) {
    bool cut = false;
    auto ids = tok.encode_padded(p, size_t(context_length), std::nullopt, &cut);
    out.emplace_back(ids.begin(), ids.end());
    if (truncated) truncated->push_back(cut);
  }
  return out;
}

namespace {

// Matmul tiles of 32 tokens x 64 rows: 77 tokens make few rows of tiles, so smaller tiles keep
// more workgroups busy than the DiT's 128 x 128.
constexpr kernels::QMatmulGeometry kGeometry{.wg_tokens = 4, .wg_rows = 8, .k_step = 16};

// Row `r` of a symmetric-quantized [rows][columns] tensor, dequantized (w = q * scale) as the
// kernels and formats::dequantize_int8_tiles do.
void dequantize_row(const TensorView& t, int64_t r, float* out) {
  const int64_t groups = t.padded_columns / kQuantGroup, tiles = t.padded_rows / kOutputTile;
  const int64_t tile = r / kOutputTile, within = r % kOutputTile;
  for (int64_t g = 0; g < groups; g++) {
    const int64_t block = quant_block_index(tile, g, tiles, groups);
    uint16_t h;
    std::memcpy(&h, t.scales.data() + (block * kOutputTile + within) * 2, 2);
    const float scale = formats::f16_to_f32(h);
    const auto* q = reinterpret_cast<const int8_t*>(t.data.data()) + block * kOutputTile * kQuantGroup + within * kQuantGroup;
    for (int64_t c = 0; c < kQuantGroup && g * kQuantGroup + c < t.columns; c++) out[g * kQuantGroup + c] = float(q[c]) * scale;
  }
}

void check_shapes(const TensorSource& s, const formats::ClipTextConfig& c) {
  const auto have = s.shapes();
  for (const auto& [name, shape] : formats::clip_text_tensor_shapes(c)) {
    auto it = have.find(name);
    if (it == have.end())
      throw Error("tensor '" + name + "' is missing", s.origin(), "the stage is incomplete or not a CLIP text encoder; re-pack it");
    if (it->second != shape)
      throw Error("tensor '" + name + "' has shape " + nlohmann::json(it->second).dump() + ", config.json implies " +
                      nlohmann::json(shape).dump(),
                  s.origin(), "re-pack the stage");
  }
  const auto& tok = s.get("text_model.embeddings.token_embedding.weight");
  if (!tok.quantized) throw Error("token_embedding is not symmetric-quantized", s.origin(), "re-pack the stage with `ember pack trellis`");
}

}  // namespace

struct TextEncoder::Impl {
  std::unique_ptr<gpu::KernelCache> own_kernels;
  gpu::KernelCache* kernels = nullptr;
  std::unique_ptr<TensorSource> source;
  formats::ClipTextConfig config;
  std::unique_ptr<llm::Tokenizer> tokenizer;
  std::vector<float> positions;  // position_embedding, dequantized [positions][C]

  struct Layer {
    kernels::QuantizedMatrix qkv, out, fc1, fc2;
    gpu::Buffer ln1_w, ln1_b, ln2_w, ln2_b;
  };
  std::vector<Layer> layers;
  gpu::Buffer final_w, final_b;

  // Activations and dispatches for one batch size, built on first use.
  struct Graph {
    gpu::Buffer h, hn, qkv, att, mlp;
    std::vector<kernels::Dispatch> dispatches;
  };
  std::map<int, Graph> graphs;

  void open(const fs::path& dir);  // from a stage pack (kernels set)
  void load();
  Graph& graph(int batch);
  std::vector<float> embed(const std::vector<std::vector<int32_t>>& ids) const;
};

void TextEncoder::Impl::load() {
  formats::check_clip_text_config(config, source->origin());
  check_shapes(*source, config);
  const gpu::Device& d = kernels->device();
  const TensorSource& s = *source;
  positions = dequantize(s.get("text_model.embeddings.position_embedding.weight"));
  auto linear = [&](const std::string& name) { return upload_linear(d, s.get(name + ".weight"), s.get(name + ".bias")); };
  for (int64_t i = 0; i < config.num_hidden_layers; i++) {
    const std::string p = "text_model.encoder.layers." + std::to_string(i) + ".";
    Layer L;
    std::vector<LinearView> qkv;
    for (const char* proj : {"q_proj", "k_proj", "v_proj"})
      qkv.push_back({s.get(p + "self_attn." + proj + ".weight"), s.get(p + "self_attn." + proj + ".bias")});
    L.qkv = upload_stacked_linears(d, qkv, p + "self_attn.qkv_proj");
    L.out = linear(p + "self_attn.out_proj");
    L.fc1 = linear(p + "mlp.fc1");
    L.fc2 = linear(p + "mlp.fc2");
    L.ln1_w = upload_raw(d, s.get(p + "layer_norm1.weight"));
    L.ln1_b = upload_raw(d, s.get(p + "layer_norm1.bias"));
    L.ln2_w = upload_raw(d, s.get(p + "layer_norm2.weight"));
    L.ln2_b = upload_raw(d, s.get(p + "layer_norm2.bias"));
    layers.push_back(std::move(L));
  }
  final_w = upload_raw(d, s.get("text_model.final_layer_norm.weight"));
  final_b = upload_raw(d, s.get("text_model.final_layer_norm.bias"));
}

TextEncoder::Impl::Graph& TextEncoder::Impl::graph(int batch) {
  auto it = graphs.find(batch);
  if (it != graphs.end()) return it->second;
  using kernels::Epilogue;
  const gpu::Device& d = kernels->device();
  const uint32_t n = uint32_t(config.max_position_embeddings), T = uint32_t(batch) * n, C = uint32_t(config.hidden_size),
                 F = uint32_t(config.intermediate_size), H = uint32_t(config.num_attention_heads);
  Graph g;
  auto buf = [&](uint64_t floats, const char* name) { return d.create_storage(floats * 4, std::string("text_encoder ") + name); };
  g.h = buf(uint64_t(T) * C, "hidden");
  g.hn = buf(uint64_t(T) * C, "normed");
  g.qkv = buf(uint64_t(T) * 3 * C, "qkv");
  g.att = buf(uint64_t(T) * C, "attention");
  g.mlp = buf(uint64_t(T) * F, "mlp");
  auto& K = *kernels;
  const bool subgroups = d.has_subgroups();
  auto norm = [&](const gpu::Buffer& w, const gpu::Buffer& b, const std::string& region) {
    return kernels::layer_norm(K, {.x = &g.h, .y = &g.hn, .rows = T, .channels = C, .eps = float(config.layer_norm_eps),
                                   .weight = &w, .bias = &b, .subgroups = subgroups},
                               region);
  };
  auto matmul = [&](const gpu::Buffer& x, uint32_t xs, const kernels::QuantizedMatrix& w, const gpu::Buffer& y, uint32_t ys,
                    Epilogue e, const std::string& region) {
    return kernels::qmatmul(K, {.x = &x, .x_stride = xs, .w = &w, .y = &y, .y_stride = ys, .tokens = T, .epilogue = e, .geometry = kGeometry},
                            region);
  };
  auto& D = g.dispatches;
  for (size_t i = 0; i < layers.size(); i++) {
    const Layer& L = layers[i];
    const std::string p = "text_model.encoder.layers." + std::to_string(i) + ".";
    D.push_back(norm(L.ln1_w, L.ln1_b, p + "layer_norm1"));
    D.push_back(matmul(g.hn, C, L.qkv, g.qkv, 3 * C, Epilogue::None, p + "self_attn.q_proj|k_proj|v_proj"));
    kernels::FlashAttentionArgs a{.q = &g.qkv, .kv = &g.qkv, .out = &g.att, .batch = uint32_t(batch), .heads = H, .nq = n, .nk = n,
                                  .q_stride = 3 * C, .q_offset = 0, .kv_stride = 3 * C, .k_offset = C, .v_offset = 2 * C,
                                  .o_stride = C, .scale = 1.0f / 8.0f, .variant = kernels::FlashVariant::Plain,
                                  .queries_per_workgroup = 64};
    a.causal = true;
    D.push_back(kernels::flash_attention(K, a, p + "self_attn.attention"));
    D.push_back(matmul(g.att, C, L.out, g.h, C, Epilogue::Residual, p + "self_attn.out_proj+residual"));
    D.push_back(norm(L.ln2_w, L.ln2_b, p + "layer_norm2"));
    D.push_back(matmul(g.hn, C, L.fc1, g.mlp, F, Epilogue::None, p + "mlp.fc1"));
    D.push_back(kernels::activation(K, kernels::Activation::QuickGelu, g.mlp, T * F, p + "mlp.activation_fn"));
    D.push_back(matmul(g.mlp, F, L.fc2, g.h, C, Epilogue::Residual, p + "mlp.fc2+residual"));
  }
  D.push_back(norm(final_w, final_b, "text_model.final_layer_norm"));
  return graphs.emplace(batch, std::move(g)).first->second;
}

std::vector<float> TextEncoder::Impl::embed(const std::vector<std::vector<int32_t>>& ids) const {
  const int64_t n = config.max_position_embeddings, C = config.hidden_size;
  const TensorView tok = source->get("text_model.embeddings.token_embedding.weight");
  std::vector<float> x(ids.size() * size_t(n * C)), row(size_t(tok.padded_columns));
  for (size_t b = 0; b < ids.size(); b++)
    for (int64_t t = 0; t < n; t++) {
      dequantize_row(tok, ids[b][size_t(t)], row.data());
      float* dst = x.data() + (int64_t(b) * n + t) * C;
      for (int64_t c = 0; c < C; c++) dst[c] = row[size_t(c)] + positions[size_t(t * C + c)];
    }
  return x;
}

TextEncoder::TextEncoder(gpu::Device& device, const fs::path& stage_dir) : impl_(std::make_unique<Impl>()) {
  impl_->own_kernels = std::make_unique<gpu::KernelCache>(device);
  impl_->kernels = impl_->own_kernels.get();
  impl_->open(stage_dir);
}

TextEncoder::TextEncoder(gpu::KernelCache& kernels, const fs::path& stage_dir) : impl_(std::make_unique<Impl>()) {
  impl_->kernels = &kernels;
  impl_->open(stage_dir);
}

void TextEncoder::Impl::open(const fs::path& dir) {
  auto pack = std::make_unique<PackTensors>(formats::StagePack::open(dir, true));
  const auto& m = pack->pack().manifest();
  if (m.stage != kTextEncoderStage)
    throw Error("this stage is '" + m.stage + "', not " + kTextEncoderStage, pack->origin(),
                "point --stage (or --text-stage) at a text encoder stage (`ember pack trellis --stage text-encoder`)");
  const std::string config_where = (dir / kConfigFile).string(), tok_where = (dir / kTokenizerFile).string();
  nlohmann::json cj;
  try {
    cj = nlohmann::json::parse(pack->pack().side_file(kConfigFile));
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(std::string("malformed JSON: ") + e.what(), config_where, "re-pack the stage");
  }
  config = formats::parse_clip_text_config(cj, config_where);
  tokenizer = std::make_unique<llm::Tokenizer>(llm::Tokenizer::from_json_text(pack->pack().side_file(kTokenizerFile), tok_where));
  source = std::move(pack);
  load();
}

TextEncoder::TextEncoder(gpu::KernelCache& kernels, std::unique_ptr<TensorSource> tensors, const formats::ClipTextConfig& config,
                         const std::string& tokenizer_json)
    : impl_(std::make_unique<Impl>()) {
  impl_->kernels = &kernels;
  impl_->config = config;
  impl_->tokenizer = std::make_unique<llm::Tokenizer>(llm::Tokenizer::from_json_text(tokenizer_json, "text encoder tokenizer.json"));
  impl_->source = std::move(tensors);
  impl_->load();
}

TextEncoder::~TextEncoder() = default;
TextEncoder::TextEncoder(TextEncoder&&) noexcept = default;

TextEncoder& TextEncoder::operator=(TextEncoder&&) noexcept = default;

int TextEncoder::context_length() const { return int(impl_->config.max_position_embeddings); }
int TextEncoder::width() const { return int(impl_->config.hidden_size); }
const formats::ClipTextConfig& TextEncoder::config() const { return impl_->config; }
const llm::Tokenizer& TextEncoder::tokenizer() const { return *impl_->tokenizer; }

std::vector<std::vector<int32_t>> TextEncoder::tokenize(const std::vector<std::string>& prompts, std::vector<bool>* truncated) const {
  return clip_tokenize(*impl_->tokenizer, prompts, context_length(), truncated);
}

std::vector<float> TextEncoder::encode_ids(const std::vector<std::vector<int32_t>>& ids, gpu::Profiler* profiler) {
  const auto& c = impl_->config;
  if (ids.empty()) throw Error("no token ids to encode", "text encoder");
  for (size_t b = 0; b < ids.size(); b++) {
    if (int64_t(ids[b].size()) != c.max_position_embeddings)
      throw Error("row " + std::to_string(b) + " has " + std::to_string(ids[b].size()) + " ids, the text encoder takes exactly " +
                      std::to_string(c.max_position_embeddings),
                  "token ids", "pad or truncate every prompt to " + std::to_string(c.max_position_embeddings) + " ids as the CLIP tokenizer does");
    for (size_t t = 0; t < ids[b].size(); t++)
      if (ids[b][t] < 0 || ids[b][t] >= c.vocab_size)
        throw Error("id " + std::to_string(ids[b][t]) + " at row " + std::to_string(b) + ", position " + std::to_string(t) +
                        " is outside the vocabulary of " + std::to_string(c.vocab_size),
                    "token ids", "use ids of this stage's tokenizer");
  }
  const gpu::Device& d = impl_->kernels->device();
  auto& g = impl_->graph(int(ids.size()));
  d.upload(g.h, std::span<const float>(impl_->embed(ids)));
  gpu::Recorder rec(d, profiler);
  for (const auto& k : g.dispatches) k.record(rec);
  rec.submit();
  return d.download_as<float>(g.hn, 0, uint64_t(ids.size()) * uint64_t(c.max_position_embeddings * c.hidden_size));
}

std::vector<float> TextEncoder::encode(const std::vector<std::string>& prompts) { return encode_ids(tokenize(prompts)); }

double TextEncoder::flops(int batch) const {
  const auto& c = impl_->config;
  const double n = double(c.max_position_embeddings), T = n * batch, C = double(c.hidden_size), F = double(c.intermediate_size);
  const double per_layer = 2 * T * C * (4 * C + 2 * F)   // q|k|v, out_proj, fc1, fc2
                           + 2 * batch * n * (n + 1) * C;  // causal QK^T and PV: n(n+1)/2 pairs each
  return per_layer * double(c.num_hidden_layers);
}

}  // namespace ember::trellis
