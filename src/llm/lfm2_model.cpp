#include "llm/lfm2_model.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"
#include "kernels/step.h"
#include "llm/lfm2_kernel_configs.h"
#include "llm/lfm2_model_parts.h"

namespace ember::llm {

using formats::LayerType;
using kernels::OutputMode;

// The matrix-matrix bind groups for chunks of T tokens (each bind carries its token count).
struct Lfm2Model::Chunk {
  uint32_t T;
  kernels::Bound embed;
  std::vector<kernels::MatmulBound> mix_in, mix_out, gate_up, down;  // down: k-major under mlp_pair
  gpu::BindGroup silu_mul;                                     // gate_up -> act, every layer
};

namespace {
uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }
}  // namespace

Lfm2Model::Lfm2Model(const gpu::Device& device, gpu::KernelCache& kernels, const formats::LlmPack& pack,
                     const ModelOptions& options)
    : device_(device), kernels_(kernels), pack_(pack), options_(options) {
  int shown = -1;
  weights_ = std::make_shared<Lfm2Weights>(device, pack, [&](uint64_t done, uint64_t total) {
    int pct = static_cast<int>(100 * done / total);
    if (options_.quiet || pct / 10 == shown / 10) return;
    shown = pct;
    std::fprintf(stderr, "\rloading weights %3d%% of %.1f MB", pct, total / 1e6);
  });
  if (!options_.quiet) std::fprintf(stderr, "\n");
  build();
}

Lfm2Model::Lfm2Model(const gpu::Device& device, gpu::KernelCache& kernels, const formats::LlmPack& pack,
                     std::shared_ptr<const Lfm2Weights> weights, const ModelOptions& options)
    : device_(device), kernels_(kernels), pack_(pack), options_(options), weights_(std::move(weights)) {
  build();
}

Lfm2Model::Lfm2Model(const Lfm2Model& other, const ModelOptions& options)
    : device_(other.device_), kernels_(other.kernels_), pack_(other.pack_), options_(options), weights_(other.weights_) {
  build();
}

uint32_t Lfm2Model::capacity_of(const formats::LlmPack& pack) {
  const int64_t rope_rows = static_cast<int64_t>(pack.f32_section("rope.cos_ext").size() / (pack.shape().head_dim / 2));
  const int64_t positions = pack.runtime().max_total_positions;
  return u32(std::min<int64_t>(positions > 0 ? positions : rope_rows, rope_rows));
}

std::shared_ptr<SequenceCaches> Lfm2Model::make_caches(const gpu::Device& device, const formats::LlmPack& pack, uint32_t slots) {
  return std::make_shared<SequenceCaches>(device, pack.shape(), capacity_of(pack), choose_kernels(pack, device).padding, slots);
}

void Lfm2Model::build() {
  const gpu::Device& device = device_;
  gpu::KernelCache& kernels = kernels_;
  const formats::LlmPack& pack = pack_;
  const auto& s = pack.shape();
  const uint32_t H = u32(s.hidden), F = u32(s.ffn), V = u32(s.vocab);
  const uint32_t Q = u32(s.q_rows()), QKV = u32(s.qkv_rows());
  const uint32_t C = std::max<uint32_t>(1, options_.prefill_chunk);
  const float eps = static_cast<float>(s.eps());
  if (s.conv_cache != 3)
    throw Error("convCache " + std::to_string(s.conv_cache) + " is not supported", "runtime.json shape", "ember's conv kernel has 3 taps");

  choices_ = choose_kernels(pack, device);
  capacity_ = capacity_of(pack);

  // ---- kernel families ----
  ops_ = std::make_unique<Ops>();
  Ops& o = *ops_;
  const Lfm2KernelConfigs kc = lfm2_kernel_configs(s, choices_);
  o.norm.emplace(kernels, kc.norm);
  o.q_norm.emplace(kernels, kc.q_norm);
  o.k_norm.emplace(kernels, kc.k_norm);
  o.rope.emplace(kernels, kc.rope);
  o.kv_write.emplace(kernels, kc.kv_write);
  if (choices_.qk_fuse)
    o.qk_norm_rope_kv.emplace(kernels, kc.qk_norm_rope_kv);
  o.attn_decode.emplace(kernels, kc.attention_decode);
  o.attn_prefill.emplace(kernels, kc.attention);
  o.conv_decode.emplace(kernels, kernels::ConvConfig{.hidden = H, .fused = true});
  o.conv_prefill.emplace(kernels, kernels::ConvConfig{.hidden = H, .fused = false});
  o.silu_mul.emplace(kernels, kernels::SiluMulConfig{.ffn = F});
  o.embed.emplace(kernels, kernels::EmbedConfig{.rows = V, .cols = H, .asymmetric = weights_->has("embed.zero_points")});
  if (choices_.mlp_pair) {
    o.mlp.emplace(kernels, kernels::MlpConfig{.hidden = H, .ffn = F, .slices = choices_.mlp_slices, .workgroup_size = choices_.mlp_workgroup,
                                              .norm_input = choices_.norm_fuse, .eps = eps, .half_product = choices_.mlp_half_product});
  }

  struct MatShape {
    const char* key;
    uint32_t rows, cols;
    OutputMode mode;
    bool asymmetric;
    bool reads_norm;  // its input is a norm of x: the decode matvec can compute it (norm_fuse)
  };
  const MatShape mats[] = {{"conv_in_proj", 3 * H, H, OutputMode::overwrite, false, true},
                           {"conv_out_proj", H, H, OutputMode::accumulate, false, false},
                           {"attn_qkv", QKV, H, OutputMode::overwrite, false, true},
                           {"attn_o_proj", H, Q, OutputMode::accumulate, false, false},
                           {"mlp_gate_up", 2 * F, H, OutputMode::overwrite, false, true},
                           {"mlp_down", H, F, OutputMode::accumulate, false, false},
                           {"head", V, H, OutputMode::overwrite, true, true}};
  bool gated = false;
  for (const auto& m : mats) {
    const auto& mv = choices_.matvec_for(m.key);
    kernels::MatvecConfig mc{.rows = m.rows, .cols = m.cols, .asymmetric = m.asymmetric, .variant = mv.variant, .geometry = mv.geometry, .mode = m.mode};
    mc.norm_input = m.reads_norm && choices_.norm_fuse;
    mc.eps = eps;
    if (std::string(m.key) == "head" && choices_.prefetch) o.prefill_head.emplace(kernels, mc);
    mc.prefetch = choices_.prefetch;
    if (std::string(m.key) == "mlp_gate_up" && choices_.gated_gate_up && !choices_.mlp_pair) {
      // silu * up fused into the gate_up matvec; a geometry too large for the doubled rows keeps
      // the separate silu_mul.
      kernels::MatvecConfig gc = mc;
      gc.rows = F;
      gc.gated = true;
      try {
        o.matvec.emplace(m.key, kernels::MatvecQ4(kernels, gc));
        gated = true;
      } catch (const Error& e) {
        choices_.warnings.push_back(std::string("mlp_gate_up: no fused silu*up with this geometry (") + e.what() + ")");
      }
    }
    if (std::string(m.key) == "conv_in_proj" && choices_.conv_step_in_proj) {
      // The decode conv step fused into the in_proj matvec (its epilogue); a geometry too large
      // for the tripled rows keeps the separate conv dispatch.
      kernels::MatvecConfig cc = mc;
      cc.rows = H;
      cc.conv = true;
      // A lane group reduces three weight rows per channel: a third of the channels keeps the
      // rows per group (and the workgroup count) the tuned geometry measured.
      cc.geometry.rows_per_subgroup = (mc.geometry.rows_per_subgroup + 2) / 3;
      try {
        o.matvec.emplace(m.key, kernels::MatvecQ4(kernels, cc));
        conv_step_fused_ = true;
      } catch (const Error& e) {
        choices_.warnings.push_back(std::string("conv_in_proj: no fused conv step with this geometry (") + e.what() + ")");
      }
    }
    if (!o.matvec.count(m.key)) o.matvec.emplace(m.key, kernels::MatvecQ4(kernels, mc));
    // Prefill: the down matmul reads the down copy of this run (k-major kquant under mlp_pair).
    const bool kmajor = choices_.mlp_pair && std::string(m.key) == "mlp_down";
    const kernels::MatmulGeometry geometry = choices_.matmul_for(m.key, m.rows, C);
    // Prefill gate_up: silu * up as the matmul's epilogue where the geometry allows it.
    const bool gated_mm = std::string(m.key) == "mlp_gate_up" && choices_.gated_gate_up && kernels::matmul_gated_fits(geometry);
    if (gated_mm) prefill_gated_ = true;
    if (!m.asymmetric)
      o.matmul.emplace(m.key, kernels::MatmulQ4(kernels, kernels::MatmulConfig{.rows = m.rows, .cols = m.cols, .mode = m.mode, .kmajor = kmajor,
                                                                               .geometry = geometry, .gated = gated_mm}));
  }
  choices_.gated_gate_up = gated;

  // ---- buffers ----
  auto f32 = [&](uint64_t n, const char* label) { return device.create_storage(n * 4, label); };
  x_ = f32(uint64_t(C) * H, "x");
  h_ = f32(uint64_t(C) * H, "h");
  bcx_ = f32(uint64_t(C) * 3 * H, "conv.bcx");
  qkv_ = f32(uint64_t(C) * QKV, "attn.qkv");
  conv_y_ = f32(uint64_t(C) * H, "conv.y");
  attn_ = f32(uint64_t(C) * Q, "attn.out");
  gu_ = f32(uint64_t(C) * 2 * F, "mlp.gate_up");
  act_ = f32(uint64_t(C) * F, "mlp.act");
  x_last_ = f32(H, "x.last");
  h_last_ = f32(H, "h.last");
  logits_ = f32(V, "logits");
  uint64_t split_floats = 0;  // split-K scratch, shared by the prefill matmuls (they run in series)
  for (const auto& [key, mm] : ops_->matmul) split_floats = std::max(split_floats, kernels::matmul_split_floats(mm.config(), C));
  if (split_floats) split_partials_ = f32(split_floats, "prefill.split_partials");
  chunk_ids_ = device.create_storage(uint64_t(C) * 4, "prefill.ids");
  tokens_ = device.create_storage(uint64_t(capacity_) * 4 + 16, "tokens");
  step_ = kernels::create_step_buffer(device);
  step_ring_ = device.create_storage(kStepRing * sizeof(kernels::StepParams), "decode.step_ring");

  const gpu::Binding cos = weights_->section("rope.cos_ext");
  const gpu::Binding sin = weights_->section("rope.sin_ext");
  caches_ = options_.caches;
  if (!caches_) {
    options_.cache_slot = 0;
    caches_ = std::make_shared<SequenceCaches>(device, s, capacity_, choices_.padding, 1);
  } else if (caches_->capacity() != capacity_ || caches_->padding() != choices_.padding || options_.cache_slot >= caches_->slots()) {
    throw Error("sequence caches of " + std::to_string(caches_->capacity()) + " positions, padding " + std::to_string(caches_->padding()) + ", " +
                    std::to_string(caches_->slots()) + " slots do not fit this model (" + std::to_string(capacity_) + " positions, padding " +
                    std::to_string(choices_.padding) + ", slot " + std::to_string(options_.cache_slot) + ")",
                "model caches", "make the caches from the model's capacity and kernel choices");
  }
  const int L = static_cast<int>(s.layers());
  // Decode's matvecs in the order a step runs them (per layer mix in, mix out, then gate_up and
  // down unless the fused MLP runs them; the head last): with prefetch each one reads the next
  // into the L2 cache, the head layer 0's first for the next token.
  std::vector<kernels::Q4Matrix> chain;
  const int per_layer = choices_.mlp_pair ? 2 : 4;
  for (int i = 0; i < L; i++) {
    const std::string p = formats::layer_prefix(i);
    const bool attn = s.layer_types[i] == LayerType::Attention;
    const std::string mix = attn ? p + "attn." : p + "conv.";
    chain.push_back(weights_->matrix(mix + (attn ? "qkv" : "in_proj"), attn ? QKV : 3 * H, H));
    chain.push_back(weights_->matrix(mix + (attn ? "o_proj" : "out_proj"), H, attn ? Q : H));
    if (!choices_.mlp_pair) {
      chain.push_back(weights_->matrix(p + "mlp.gate_up", 2 * F, H));
      chain.push_back(weights_->matrix(p + "mlp.down", H, F));
    }
  }
  auto next_of = [&](size_t k) -> const kernels::Q4Matrix* { return choices_.prefetch ? &chain[(k + 1) % (chain.size())] : nullptr; };
  for (int i = 0; i < L; i++) {
    const size_t at = size_t(i) * per_layer;  // this layer's first entry of chain
    Layer layer;
    layer.type = s.layer_types[i];
    layer.prefix = formats::layer_prefix(i);
    const std::string& p = layer.prefix;
    const bool attn = layer.type == LayerType::Attention;
    const std::string mix = attn ? p + "attn." : p + "conv.";
    layer.mix_in_key = attn ? "attn_qkv" : "conv_in_proj";
    layer.mix_out_key = attn ? "attn_o_proj" : "conv_out_proj";
    layer.mix_in = weights_->matrix(mix + (attn ? "qkv" : "in_proj"), attn ? QKV : 3 * H, H);
    layer.mix_out = weights_->matrix(mix + (attn ? "o_proj" : "out_proj"), H, attn ? Q : H);
    layer.gate_up = weights_->matrix(p + "mlp.gate_up", 2 * F, H);
    layer.down = choices_.mlp_pair ? weights_->matrix(p + "mlp.down", F, H, /*kmajor=*/true) : weights_->matrix(p + "mlp.down", H, F);

    const gpu::Binding op_norm_w = weights_->section(mix + (attn ? "qkv.norm" : "in_proj.norm"));
    const gpu::Binding ffn_norm_w = weights_->section(p + "mlp.gate_up.norm");
    layer.op_norm = o.norm->bind({&x_}, op_norm_w, {&h_});
    layer.ffn_norm = o.norm->bind({&x_}, ffn_norm_w, {&h_});
    // With norm_fuse the decode matvecs read x and the norm weight instead of h.
    const bool nf = choices_.norm_fuse;
    layer.decode_norm_fused = nf;
    const gpu::Binding mix_in_x = nf ? gpu::Binding{&x_} : gpu::Binding{&h_}, mix_in_norm = nf ? op_norm_w : gpu::Binding{};
    const gpu::Binding taps = attn ? gpu::Binding{} : weights_->section(p + "conv.core.taps");
    if (attn) layer.mix_in_mv = o.matvec.at(layer.mix_in_key).bind(layer.mix_in, mix_in_x, {&qkv_}, mix_in_norm, {}, {}, next_of(at));
    else if (conv_step_fused_)
      layer.mix_in_mv = o.matvec.at(layer.mix_in_key).bind(layer.mix_in, mix_in_x, {&conv_y_}, mix_in_norm, taps, conv_state(i), next_of(at));
    else layer.mix_in_mv = o.matvec.at(layer.mix_in_key).bind(layer.mix_in, mix_in_x, {&bcx_}, mix_in_norm, {}, {}, next_of(at));
    layer.mix_out_mv = o.matvec.at(layer.mix_out_key)
                           .bind(layer.mix_out, attn ? gpu::Binding{&attn_} : gpu::Binding{&conv_y_}, {&x_}, {}, {}, {}, next_of(at + 1));
    if (attn) {
      layer.q_norm = o.q_norm->bind({&qkv_}, weights_->section(p + "attn.qkv.q_norm"));
      layer.k_norm = o.k_norm->bind({&qkv_}, weights_->section(p + "attn.qkv.k_norm"));
      layer.rope = o.rope->bind({&qkv_}, {nullptr}, cos, sin, {&step_});
      layer.kv_write = o.kv_write->bind({&qkv_}, {&qkv_}, k_cache(i), v_cache(i), {&step_});
      if (o.qk_norm_rope_kv)
        layer.qk_norm_rope_kv = o.qk_norm_rope_kv->bind({&qkv_}, weights_->section(p + "attn.qkv.q_norm"), weights_->section(p + "attn.qkv.k_norm"),
                                                        cos, sin, k_cache(i), v_cache(i), {&step_});
      if (o.attn_decode->fuses_norm_rope_kv())
        layer.attn_decode = o.attn_decode->bind({&qkv_}, k_cache(i), v_cache(i), {&attn_}, {&step_},
                                                {weights_->section(p + "attn.qkv.q_norm"), weights_->section(p + "attn.qkv.k_norm"), cos, sin});
      else layer.attn_decode = o.attn_decode->bind({&qkv_}, k_cache(i), v_cache(i), {&attn_}, {&step_});
      layer.attn_prefill = o.attn_prefill->bind({&qkv_}, k_cache(i), v_cache(i), {&attn_}, {&step_});
    } else {
      layer.conv_decode = o.conv_decode->bind({&bcx_}, taps, conv_state(i), {&conv_y_}, {&step_});
      layer.conv_prefill = o.conv_prefill->bind({&bcx_}, taps, conv_state(i), {&conv_y_}, {&step_});
    }
    if (choices_.mlp_pair) {
      layer.mlp = o.mlp->bind(layer.gate_up, layer.down, {nf ? &x_ : &h_, 0, uint64_t(H) * 4}, {&x_, 0, uint64_t(H) * 4},
                                     nf ? ffn_norm_w : gpu::Binding{});
    } else {
      layer.gate_up_mv = o.matvec.at("mlp_gate_up").bind(layer.gate_up, nf ? gpu::Binding{&x_} : gpu::Binding{&h_},
                                                         gated ? gpu::Binding{&act_} : gpu::Binding{&gu_}, nf ? ffn_norm_w : gpu::Binding{},
                                                         {}, {}, next_of(at + 2));
      layer.silu_mul = o.silu_mul->bind({&gu_}, {&act_});
      layer.down_mv = o.matvec.at("mlp_down").bind(layer.down, {&act_}, {&x_}, {}, {}, {}, next_of(at + 3));
    }
    layers_.push_back(std::move(layer));
  }
  const gpu::Binding head_norm_w = weights_->section("head.norm");
  head_norm_ = o.norm->bind({&x_last_}, head_norm_w, {&h_last_});
  const auto head = weights_->matrix("head", V, H);
  // The head after a prefill runs once: it prefetches nothing (chain's last entry's next is layer 0's first).
  const kernels::MatvecQ4& prefill_head = o.prefill_head ? *o.prefill_head : o.matvec.at("head");
  const kernels::Q4Matrix* head_next = next_of(chain.size() - 1);
  if (choices_.norm_fuse) {
    head_mv_ = prefill_head.bind(head, {&x_last_}, {&logits_}, head_norm_w);
    decode_head_mv_ = o.matvec.at("head").bind(head, {&x_, 0, uint64_t(H) * 4}, {&logits_}, head_norm_w, {}, {}, head_next);  // decode: row 0 is the token
  } else {
    head_mv_ = prefill_head.bind(head, {&h_last_}, {&logits_});
  }
  decode_embed_ = o.embed->bind_decode(weights_->matrix("embed", V, H), {&tokens_}, {&step_}, {&x_});
  if (choices_.residual_mlp_workgroups) build_residual_mlp();
  device.check("building the LFM2 graph");
}

Lfm2Model::~Lfm2Model() = default;

const kernels::MatvecQ4& Lfm2Model::decode_matvec(const std::string& shape_key) const { return ops_->matvec.at(shape_key); }
const kernels::MatvecQ4& Lfm2Model::prefill_head_matvec() const { return ops_->prefill_head ? *ops_->prefill_head : ops_->matvec.at("head"); }
const gpu::Kernel& Lfm2Model::prefill_attention_kernel() const { return ops_->attn_prefill->kernel(); }
const kernels::MatmulConfig& Lfm2Model::prefill_matmul(const std::string& shape_key) const { return ops_->matmul.at(shape_key).config(); }

uint64_t Lfm2Model::decode_weight_bytes() const {
  const auto& s = shape();
  uint64_t bytes = 0;
  for (const auto& m : formats::llm_matrices(s)) {
    uint64_t blocks = uint64_t(m.rows) * m.cols / 32;
    bytes += uint64_t(m.rows) * m.cols / 2 + blocks * 4 + (m.asymmetric ? blocks / 2 : 0);
  }
  return bytes + uint64_t(s.hidden) * 4 * (2 * s.layers() + 1);
}

void Lfm2Model::reset() {
  position_ = 0;
  decode_steps_ = 0;
  clear_state_ = true;
  pick_embedded_ = false;
}

void Lfm2Model::set_position(uint32_t n) {
  if (n == 0) return reset();
  if (n > capacity_)
    throw Error("position " + std::to_string(n) + " is beyond the context (" + std::to_string(capacity_) + " positions)", "set_position");
  position_ = n;
  step_next_.reset();  // the next decode writes its step parameters
  pick_embedded_ = false;
}

void Lfm2Model::upload_step(uint32_t start, uint32_t rows) {
  kernels::upload_step(device_, step_, kernels::StepParams{.start = start, .rows = rows, .decode_step = decode_steps_});
  step_next_ = start + rows;
  pick_embedded_ = false;  // the prefill's tokens replace what a pick embedded
}

const Lfm2Model::Chunk& Lfm2Model::chunk_for(uint32_t T) {
  auto it = chunks_.find(T);
  if (it != chunks_.end()) return *it->second;
  const Ops& o = *ops_;
  const uint32_t H = u32(shape().hidden);
  auto c = std::make_unique<Chunk>();
  c->T = T;
  c->embed = o.embed->bind(weights_->matrix("embed", vocab(), H), {&chunk_ids_}, {&x_}, T);
  for (const Layer& l : layers_) {
    const bool attn = l.type == LayerType::Attention;
    const gpu::Binding split{&split_partials_};
    c->mix_in.push_back(o.matmul.at(l.mix_in_key).bind(l.mix_in, {&h_}, attn ? gpu::Binding{&qkv_} : gpu::Binding{&bcx_}, T, split));
    c->mix_out.push_back(o.matmul.at(l.mix_out_key).bind(l.mix_out, attn ? gpu::Binding{&attn_} : gpu::Binding{&conv_y_}, {&x_}, T, split));
    c->gate_up.push_back(o.matmul.at("mlp_gate_up").bind(l.gate_up, {&h_}, prefill_gated_ ? gpu::Binding{&act_} : gpu::Binding{&gu_}, T, split));
    c->down.push_back(o.matmul.at("mlp_down").bind(l.down, {&act_}, {&x_}, T, split));
  }
  c->silu_mul = o.silu_mul->bind({&gu_}, {&act_});
  return *chunks_.emplace(T, std::move(c)).first->second;
}

void Lfm2Model::record_layers(gpu::Recorder& rec, uint32_t T, const Chunk* chunk) {
  const Ops& o = *ops_;
  const bool decode = chunk == nullptr;
  if (clear_state_) {
    for (size_t i = 0; i < layers_.size(); i++) {
      const gpu::Binding state = conv_state(i);
      // Only a sequence that starts at position 0 starts from zero states (set_position keeps them).
      if (*state.buffer && position_ == 0) rec.clear(*state.buffer, state.offset, state.size);
      // The residual MLP's tagged words and stage counters start over with decode_steps_ (a step
      // recorded without it, as the profile's leave-one-out does, leaves its counters behind).
      // The shared status word stays (a wait that gave up is reported until the model is
      // rebuilt), and so does the stall word (tests).
      if (residual_mlp_) rec.clear(residual_scratch_, residual_stride_ * i, residual_status_offset_ + 12);
    }
    clear_state_ = false;
  }
  for (size_t i = 0; i < layers_.size(); i++) {
    const Layer& l = layers_[i];
    if (!decode || !l.decode_norm_fused) o.norm->record(rec, l.op_norm, T);
    if (decode) o.matvec.at(l.mix_in_key).record(rec, l.mix_in_mv);
    else o.matmul.at(l.mix_in_key).record(rec, chunk->mix_in[i]);
    if (l.type == LayerType::Attention) {
      if (decode && o.attn_decode->fuses_norm_rope_kv()) {
        // the attention dispatch norms, rotates and appends k/v itself
      } else if (o.qk_norm_rope_kv) {
        o.qk_norm_rope_kv->record(rec, l.qk_norm_rope_kv, T);
      } else {
        o.q_norm->record(rec, l.q_norm, T);
        o.k_norm->record(rec, l.k_norm, T);
        o.rope->record(rec, l.rope, T);
        o.kv_write->record(rec, l.kv_write, T);
      }
      if (decode) o.attn_decode->record(rec, l.attn_decode, choices_.blocks_for(position_ + 1));
      else o.attn_prefill->record(rec, l.attn_prefill, T);
    } else {
      if (!decode) o.conv_prefill->record(rec, l.conv_prefill, T);
      else if (!conv_step_fused_) o.conv_decode->record(rec, l.conv_decode, T);  // else in the in_proj matvec
    }
    if (decode && residual_mlp_) {  // mix_out, the ffn norm and the MLP in one dispatch
      o.residual_mlp.at(l.mix_out.cols).record(rec, l.residual_mlp);
      rec.watch(residual_status_);
      continue;
    }
    if (decode) o.matvec.at(l.mix_out_key).record(rec, l.mix_out_mv);
    else o.matmul.at(l.mix_out_key).record(rec, chunk->mix_out[i]);

    if (!decode || !l.decode_norm_fused) o.norm->record(rec, l.ffn_norm, T);
    if (!decode) {  // prefill: matrix-matrix whatever the decode MLP is
      o.matmul.at("mlp_gate_up").record(rec, chunk->gate_up[i]);
      if (!prefill_gated_) o.silu_mul->record(rec, chunk->silu_mul, T);
      o.matmul.at("mlp_down").record(rec, chunk->down[i]);
    } else if (choices_.mlp_pair) {
      o.mlp->record(rec, l.mlp);
    } else {
      o.matvec.at("mlp_gate_up").record(rec, l.gate_up_mv);
      if (!choices_.gated_gate_up) o.silu_mul->record(rec, l.silu_mul, T);
      o.matvec.at("mlp_down").record(rec, l.down_mv);
    }
  }
}

void Lfm2Model::record_head(gpu::Recorder& rec, uint32_t T, bool decode) {
  // Only the last token's logits are needed: its row goes through the final norm and the head.
  // Decode with norm_fuse: the head matvec norms row 0 of x itself (no copy, no norm dispatch).
  if (decode && choices_.norm_fuse) {
    ops_->matvec.at("head").record(rec, decode_head_mv_);
    return;
  }
  const uint32_t H = u32(shape().hidden);
  rec.copy(x_, uint64_t(T - 1) * H * 4, x_last_, 0, uint64_t(H) * 4);
  if (!choices_.norm_fuse) ops_->norm->record(rec, head_norm_, 1);
  prefill_head_matvec().record(rec, head_mv_);
}

void Lfm2Model::prefill(std::span<const uint32_t> ids, gpu::Profiler* profiler) {
  if (ids.empty()) return;
  if (position_ + ids.size() > capacity_)
    throw Error("the prompt needs " + std::to_string(position_ + ids.size()) + " positions but the model holds " +
                    std::to_string(capacity_) + " (maxTotalPositions)",
                "prefill", "shorten the prompt");
  for (uint32_t id : ids)
    if (id >= vocab()) throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(vocab()), "prefill");
  const uint32_t C = std::max<uint32_t>(1, options_.prefill_chunk);
  prefill_dispatches_ = prefill_chunks_ = 0;
  for (size_t s = 0; s < ids.size(); s += C) {
    const uint32_t T = static_cast<uint32_t>(std::min<size_t>(C, ids.size() - s));
    const Chunk& chunk = chunk_for(T);
    auto part = ids.subspan(s, T);
    device_.upload(chunk_ids_, part);
    device_.upload(tokens_, part, uint64_t(position_) * 4);
    upload_step(position_, T);
    gpu::Recorder rec(device_, profiler);
    ops_->embed->record(rec, chunk.embed);
    record_layers(rec, T, &chunk);
    if (s + T == ids.size()) record_head(rec, T);
    prefill_dispatches_ += rec.dispatches();
    prefill_chunks_++;
    rec.submit();
    position_ += T;
  }
}

void Lfm2Model::prefill_logits(std::span<const uint32_t> ids, const LogitRows& on_rows, uint32_t max_rows) {
  if (ids.empty()) return;
  const uint32_t C = std::max<uint32_t>(1, options_.prefill_chunk), V = vocab();
  const uint64_t row_bytes = uint64_t(V) * 4;
  // Rows per read-back: at most 64 MiB of logits at a time (256 rows of a 65536 vocabulary).
  const uint64_t fit = max_rows ? max_rows : (uint64_t{64} << 20) / row_bytes;
  const uint32_t R = static_cast<uint32_t>(std::clamp<uint64_t>(fit, 1, C));
  gpu::Buffer rows = device_.create_storage(std::min<uint64_t>(R, ids.size()) * row_bytes, "logits.rows");
  for (size_t s = 0; s < ids.size(); s += C) {
    const uint32_t T = static_cast<uint32_t>(std::min<size_t>(C, ids.size() - s));
    const uint32_t first = position_;
    prefill(ids.subspan(s, T));  // one chunk: its final hidden states stay in x_
    for (uint32_t r0 = 0; r0 < T; r0 += R) {
      const uint32_t n = std::min(R, T - r0);
      gpu::Recorder rec(device_);
      for (uint32_t t = 0; t < n; t++) {
        record_head(rec, r0 + t + 1);  // row r0 + t of x_
        rec.copy(logits_, 0, rows, t * row_bytes, row_bytes);
      }
      rec.submit();
      on_rows(first + r0, device_.download_as<float>(rows, 0, uint64_t(n) * V));
    }
  }
}

kernels::PickEmbedding Lfm2Model::pick_embedding() const {
  const uint32_t H = u32(shape().hidden);
  return {weights_->matrix("embed", vocab(), H), {&x_, 0, uint64_t(H) * 4}, {&step_}};
}

void Lfm2Model::picked_embedded() {
  if (step_next_ != position_)
    throw Error("an embedding sampler pick at position " + std::to_string(position_) + " follows no prefill or decode step of this model",
                "decode", "record the embedding pick only right after a prefill or a decode step");
  pick_embedded_ = true;
}

void Lfm2Model::record_decode(gpu::Recorder& rec) {
  if (position_ >= capacity_)
    throw Error("the context is full (" + std::to_string(capacity_) + " positions)", "decode",
                "start a new conversation or use a pack with a larger maxTotalPositions");
  const size_t before = rec.dispatches();
  if (step_next_ != position_)
    rec.write(step_ring_, uint64_t(position_ % kStepRing) * sizeof(kernels::StepParams),
              kernels::StepParams{.start = position_, .rows = 0, .decode_step = decode_steps_}, step_);
  decode_steps_++;  // from 1; wrapping keeps the parity alternating
  // Embeds tokens[position_]; step_ becomes {position_, 1, decode_steps_} (unless a pick did both).
  if (!pick_embedded_) decode_embed_.record(rec);
  pick_embedded_ = false;
  record_layers(rec, 1, nullptr);
  record_head(rec, 1, /*decode=*/true);
  position_++;
  step_next_ = position_;
  decode_dispatches_ = rec.dispatches() - before;
}

size_t Lfm2Model::decode_stages() const { return decode_dispatches_ + (residual_mlp_ ? (kResidualMlpStages - 1) * layers_.size() : 0); }

}  // namespace ember::llm
