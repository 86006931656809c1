#include "llm/lfm2_batch.h"

#include <algorithm>
#include <optional>

#include "common/error.h"
#include "kernels/attention.h"
#include "kernels/lfm2/conv.h"
#include "kernels/elementwise.h"
#include "kernels/embed_q4.h"
#include "kernels/matvec_q4_batch.h"
#include "kernels/mlp_q4.h"
#include "kernels/qk_norm_rope_kv.h"
#include "kernels/rmsnorm.h"
#include "kernels/step.h"
#include "llm/lfm2_kernel_configs.h"
#include "llm/lfm2_layer_weights.h"

namespace ember::llm {

using formats::LayerType;
using kernels::OutputMode;

namespace {
uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }
// Rows one batched matvec dispatch takes; more rows take several dispatches.
constexpr uint32_t kVectorsPerDispatch = kernels::kMaxVectors;

const Lfm2Model& first_of(const std::vector<Lfm2Model*>& sequences) {
  if (sequences.empty() || !sequences[0]) throw Error("no sequences to batch", "batch decoder", "give at least one sequence");
  return *sequences[0];
}
}  // namespace

// The kernel families, configured as Lfm2Model configures its own (so every per-sequence kernel
// computes exactly what the model's decode computes) and over every sequence at once, plus the
// batched matvec per shape.
struct Lfm2BatchDecoder::Ops {
  std::optional<kernels::RmsNorm> norm;
  std::optional<kernels::QkNormRopeKv> qk_norm_rope_kv;
  std::optional<kernels::AttentionDecode> attn_decode;
  std::optional<kernels::ShortConv> conv;
  std::optional<kernels::SiluMul> silu_mul;
  std::optional<kernels::EmbedQ4> embed;
  std::optional<kernels::MlpQ4> mlp;
  std::map<std::string, kernels::MatvecBatchQ4> matvec;  // by shape key
};

// A layer's matrices, and its sequence-state kernels bound once to every row and every cache slot
// (each dispatch steps the sequences listed in steps_).
struct Lfm2BatchDecoder::Layer : Lfm2LayerWeights {
  gpu::BindGroup op_norm, ffn_norm, silu_mul, qk_norm_rope_kv;
  kernels::AttentionDecode::Groups attn;
  kernels::ShortConv::Groups conv;
  std::vector<kernels::MlpBound> mlp;  // mlp_pair: the fused MLP on each row
};

// The batched matvecs over rows [0, T): one Bound per dispatch of up to kVectorsPerDispatch rows.
struct Lfm2BatchDecoder::Width {
  kernels::Bound embed;
  std::vector<std::vector<kernels::Bound>> mix_in, mix_out, gate_up, down;
  std::vector<kernels::Bound> head;
};

std::string Lfm2BatchDecoder::unsupported(const Lfm2Model& model) {
  std::string caches = model.caches().whole_binding_problem(model.device());
  if (!caches.empty()) return caches;
  const auto& s = model.shape();
  const uint32_t align = model.device().limits().minStorageBufferOffsetAlignment;
  const std::pair<const char*, int64_t> strides[] = {{"hidden", s.hidden},       {"3 x hidden", 3 * s.hidden}, {"q rows", s.q_rows()},
                                                     {"qkv rows", s.qkv_rows()}, {"ffn", s.ffn},               {"2 x ffn", 2 * s.ffn},
                                                     {"vocab", s.vocab}};
  for (const auto& [what, n] : strides)
    if (align == 0 || (n * 4) % align != 0)
      return std::string("a batch row of ") + what + " (" + std::to_string(n) + " f32) is not a multiple of the device's " +
             std::to_string(align) + "-byte storage offset alignment";
  return {};
}

Lfm2BatchDecoder::Lfm2BatchDecoder(std::vector<Lfm2Model*> sequences)
    : sequences_(std::move(sequences)), model_(first_of(sequences_)) {
  const std::string why = unsupported(model_);
  if (!why.empty()) throw Error(why, "batch decoder", "decode the sequences one by one");
  for (uint32_t r = 0; r < rows(); r++) {
    const Lfm2Model& m = *sequences_[r];
    if (&m.weights() != &model_.weights()) throw Error("sequences of different models", "batch decoder", "batch copies of one model");
    if (&m.caches() != &model_.caches() || m.cache_slot() != r)
      throw Error("row " + std::to_string(r) + " is not slot " + std::to_string(r) + " of the first sequence's caches", "batch decoder",
                  "make the sequences with ModelOptions{.caches = shared caches, .cache_slot = row}");
  }

  const gpu::Device& device = model_.device();
  gpu::KernelCache& kernels = model_.kernels();
  const Lfm2Weights& weights = model_.weights();
  const KernelChoices& choices = model_.choices();
  const auto& s = model_.shape();
  const uint32_t N = rows();
  const uint32_t H = u32(s.hidden), F = u32(s.ffn), V = u32(s.vocab);
  const uint32_t Q = u32(s.q_rows()), QKV = u32(s.qkv_rows());

  // ---- kernel families (configurations shared with Lfm2Model::build) ----
  ops_ = std::make_unique<Ops>();
  Ops& o = *ops_;
  const SequenceCaches& caches = model_.caches();
  const Lfm2KernelConfigs kc = lfm2_kernel_configs(s, choices);
  o.norm.emplace(kernels, kc.norm);
  kernels::QkNormRopeKvConfig qc = kc.qk_norm_rope_kv;
  qc.cache_stride = caches.kv_slot_stride();
  o.qk_norm_rope_kv.emplace(kernels, qc);
  kernels::AttentionConfig ac = kc.attention_decode;
  ac.max_sequences = N;
  ac.seq_stride = caches.kv_slot_stride();
  o.attn_decode.emplace(kernels, ac);
  o.conv.emplace(kernels, kernels::ConvConfig{.hidden = H, .state_stride = caches.conv_slot_stride(), .fused = true});
  o.silu_mul.emplace(kernels, kernels::SiluMulConfig{.ffn = F});
  o.embed.emplace(kernels, kernels::EmbedConfig{.rows = V, .cols = H, .asymmetric = weights.has("embed.zero_points")});
  if (choices.mlp_pair)
    o.mlp.emplace(kernels, kernels::MlpConfig{.hidden = H, .ffn = F, .slices = choices.mlp_slices, .workgroup_size = choices.mlp_workgroup});
  for (const auto& m : lfm2_matrix_shapes(s))
    o.matvec.emplace(m.key, kernels::MatvecBatchQ4(kernels, {.rows = m.rows,
                                                             .cols = m.cols,
                                                             .asymmetric = m.asymmetric,
                                                             .mode = m.accumulate ? OutputMode::accumulate : OutputMode::overwrite,
                                                             .max_vectors = kVectorsPerDispatch}));

  // ---- buffers: one row per sequence ----
  auto f32 = [&](uint64_t per_row, const char* label) { return device.create_storage(uint64_t(N) * per_row * 4, label); };
  x_ = f32(H, "batch.x");
  h_ = f32(H, "batch.h");
  bcx_ = f32(3 * H, "batch.conv.bcx");
  qkv_ = f32(QKV, "batch.attn.qkv");
  conv_y_ = f32(H, "batch.conv.y");
  attn_ = f32(Q, "batch.attn.out");
  gu_ = f32(2 * F, "batch.mlp.gate_up");
  act_ = f32(F, "batch.mlp.act");
  logits_ = f32(V, "batch.logits");
  ids_ = device.create_storage(std::max<uint64_t>(16, uint64_t(N) * 4), "batch.ids");
  steps_ = device.create_storage(uint64_t(N) * sizeof(kernels::StepParams), "batch.steps");

  auto row = [](const gpu::Buffer& b, uint32_t r, uint32_t per_row) {
    return gpu::Binding{&b, uint64_t(r) * per_row * 4, uint64_t(per_row) * 4};
  };
  const gpu::Binding cos = weights.section("rope.cos_ext");
  const gpu::Binding sin = weights.section("rope.sin_ext");
  const int L = static_cast<int>(s.layers());
  for (int i = 0; i < L; i++) {
    Layer layer;
    // The model's down weight: with mlp_pair the k-major copy, which only the fused MLP reads.
    static_cast<Lfm2LayerWeights&>(layer) = lfm2_layer_weights(weights, s, model_.graph(), i, choices.mlp_pair);
    const std::string p = formats::layer_prefix(i);
    const bool attn = layer.type == LayerType::Attention;
    const std::string mix = attn ? p + "attn." : p + "conv.";
    layer.op_norm = o.norm->bind({&x_}, weights.section(mix + (attn ? "qkv.norm" : "in_proj.norm")), {&h_});
    layer.ffn_norm = o.norm->bind({&x_}, weights.section(p + "mlp.gate_up.norm"), {&h_});
    if (attn) {
      const gpu::Binding q_norm = weights.section(p + "attn.qkv.q_norm");
      const gpu::Binding k_norm = weights.section(p + "attn.qkv.k_norm");
      layer.qk_norm_rope_kv = o.qk_norm_rope_kv->bind({&qkv_}, q_norm, k_norm, cos, sin, caches.k_all(i), caches.v_all(i), {&steps_});
      if (o.attn_decode->fuses_norm_rope_kv())
        layer.attn = o.attn_decode->bind({&qkv_}, caches.k_all(i), caches.v_all(i), {&attn_}, {&steps_}, {q_norm, k_norm, cos, sin});
      else layer.attn = o.attn_decode->bind({&qkv_}, caches.k_all(i), caches.v_all(i), {&attn_}, {&steps_});
    } else {
      layer.conv = o.conv->bind({&bcx_}, weights.section(p + "conv.core.taps"), caches.conv_state_all(i), {&conv_y_}, {&steps_});
    }
    if (!choices.mlp_pair) layer.silu_mul = o.silu_mul->bind({&gu_}, {&act_});
    if (choices.mlp_pair)
      for (uint32_t r = 0; r < N; r++) layer.mlp.push_back(o.mlp->bind(layer.gate_up, layer.down, row(h_, r, H), row(x_, r, H)));
    layers_.push_back(std::move(layer));
  }
  head_norm_ = o.norm->bind({&x_}, weights.section("head.norm"), {&h_});
  // The batched matvec takes no fusions: the plan keeps only those of the fused MLP and the
  // attention kernel.
  Lfm2Fusions fusions{.mlp_pair = choices.mlp_pair, .qk_in_attention = o.attn_decode->fuses_norm_rope_kv()};
  plan_ = plan_lfm2(model_.graph(), fusions, Lfm2Mode::batched);
  device.check("building the batched LFM2 decode graph");
}

Lfm2BatchDecoder::~Lfm2BatchDecoder() = default;

gpu::Binding Lfm2BatchDecoder::logits_row(uint32_t r) const {
  const uint64_t bytes = uint64_t(model_.vocab()) * 4;
  return {&logits_, r * bytes, bytes};
}

const Lfm2BatchDecoder::Width& Lfm2BatchDecoder::width_for(uint32_t T) {
  auto it = widths_.find(T);
  if (it != widths_.end()) return *it->second;
  const Ops& o = *ops_;
  const Lfm2Weights& weights = model_.weights();
  const uint32_t H = u32(model_.shape().hidden);
  // y = W x over rows [0, T), kVectorsPerDispatch rows per dispatch.
  auto bind = [&](const std::string& key, const kernels::Q4Matrix& w, const gpu::Buffer& x, const gpu::Buffer& y) {
    const auto& mv = o.matvec.at(key);
    const uint32_t cols = mv.config().cols, out = mv.config().rows;
    std::vector<kernels::Bound> parts;
    for (uint32_t r0 = 0; r0 < T; r0 += kVectorsPerDispatch) {
      const uint32_t n = std::min(kVectorsPerDispatch, T - r0);
      parts.push_back(mv.bind(w, {&x, uint64_t(r0) * cols * 4, uint64_t(n) * cols * 4}, {&y, uint64_t(r0) * out * 4, uint64_t(n) * out * 4}, n));
    }
    return parts;
  };
  auto w = std::make_unique<Width>();
  w->embed = o.embed->bind(weights.matrix("embed", model_.vocab(), H), {&ids_, 0, uint64_t(T) * 4}, {&x_}, T);
  for (const Layer& l : layers_) {
    const bool attn = l.type == LayerType::Attention;
    w->mix_in.push_back(bind(l.mix_in_key, l.mix_in, h_, attn ? qkv_ : bcx_));
    w->mix_out.push_back(bind(l.mix_out_key, l.mix_out, attn ? attn_ : conv_y_, x_));
    if (!model_.choices().mlp_pair) {
      w->gate_up.push_back(bind("mlp_gate_up", l.gate_up, h_, gu_));
      w->down.push_back(bind("mlp_down", l.down, act_, x_));
    }
  }
  w->head = bind("head", weights.matrix("head", model_.vocab(), H), h_, logits_);
  return *widths_.emplace(T, std::move(w)).first->second;
}

void Lfm2BatchDecoder::record(gpu::Recorder& rec, std::span<const uint32_t> rows) {
  if (rows.empty()) return;
  uint32_t T = 0;
  std::vector<bool> seen(this->rows());
  for (uint32_t r : rows) {
    if (r >= this->rows() || seen[r]) throw Error("row " + std::to_string(r) + " is out of range or listed twice", "batch decode");
    seen[r] = true;
    T = std::max(T, r + 1);
    const Lfm2Model& m = *sequences_[r];
    if (m.position() == 0) throw Error("row " + std::to_string(r) + " has no prompt", "batch decode", "prefill a sequence before decoding it");
    if (m.position() >= m.capacity())
      throw Error("the context is full (" + std::to_string(m.capacity()) + " positions)", "decode",
                  "start a new conversation or use a pack with a larger maxTotalPositions");
  }
  const Ops& o = *ops_;
  const Width& w = width_for(T);
  const KernelChoices& choices = model_.choices();
  auto matvec = [&](const std::string& key, const std::vector<kernels::Bound>& parts) {
    for (const auto& b : parts) o.matvec.at(key).record(rec, b);
  };

  // Rows in [0, T) that are not stepping carry stale values through the batched matvecs; every
  // row of those is computed independently of the others, and nothing reads them afterwards. The
  // kernels with sequence state (caches, conv states) step only the rows listed in steps_.
  std::vector<kernels::StepParams> steps;
  uint32_t longest = 0;
  for (uint32_t r : rows) {
    const Lfm2Model& m = *sequences_[r];
    steps.push_back({.start = m.position(), .rows = 1, .seq = r});
    longest = std::max(longest, m.position() + 1);
    rec.copy(m.tokens(), uint64_t(m.position()) * 4, ids_, uint64_t(r) * 4, 4);
  }
  kernels::upload_steps(model_.device(), steps_, steps);
  const uint32_t n = static_cast<uint32_t>(rows.size());
  for (const Lfm2Dispatch& d : plan_.steps) {
    const Layer* l = d.layer >= 0 ? &layers_[size_t(d.layer)] : nullptr;
    const size_t i = size_t(d.layer);
    const Lfm2Role first = model_.graph().ops[d.first].role;
    switch (d.kernel) {
      case Lfm2Kernel::embed: o.embed->record(rec, w.embed); break;
      case Lfm2Kernel::rms_norm: o.norm->record(rec, first == Lfm2Role::op_norm ? l->op_norm : first == Lfm2Role::ffn_norm ? l->ffn_norm : head_norm_, T); break;
      case Lfm2Kernel::matvec_batch:
        switch (first) {
          case Lfm2Role::mix_in: matvec(l->mix_in_key, w.mix_in[i]); break;
          case Lfm2Role::mix_out: matvec(l->mix_out_key, w.mix_out[i]); break;
          case Lfm2Role::gate_up: matvec("mlp_gate_up", w.gate_up[i]); break;
          case Lfm2Role::down: matvec("mlp_down", w.down[i]); break;
          default: matvec("head", w.head);
        }
        break;
      case Lfm2Kernel::conv_step: o.conv->record(rec, l->conv, 1, n); break;
      case Lfm2Kernel::qk_norm_rope_kv: o.qk_norm_rope_kv->record(rec, l->qk_norm_rope_kv, 1, n); break;
      case Lfm2Kernel::attention_decode: o.attn_decode->record(rec, l->attn, choices.blocks_for(longest), n); break;
      case Lfm2Kernel::silu_mul: o.silu_mul->record(rec, l->silu_mul, T); break;
      case Lfm2Kernel::mlp:
        for (uint32_t r : rows) o.mlp->record(rec, l->mlp[r]);
        break;
      default: throw Error("no batched " + std::string(lfm2_kernel_name(d.kernel)) + " kernel for '" + d.label + "'", "lfm2 batch plan");
    }
  }
  for (uint32_t r : rows) sequences_[r]->advance_position();
}

}  // namespace ember::llm
