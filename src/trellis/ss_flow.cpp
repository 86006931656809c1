#include "trellis/ss_flow.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/error.h"
#include "kernels/flash_attention.h"
#include "kernels/flow_elementwise.h"
#include "kernels/layer_norm.h"
#include "trellis/ss_flow_stage.h"
#include "trellis/stage_upload.h"

namespace ember::trellis {

struct SsFlowModel::Weights {
  struct Block {
    kernels::QuantizedMatrix qkv, self_out, q, kv, cross_out, mlp0, mlp2;
    gpu::Buffer gamma_q, gamma_k, norm2_w, norm2_b;
  };
  kernels::QuantizedMatrix t0, t2, input, out;
  // Every block's adaLN_modulation stacked along rows: they all depend on the timestep alone, so one
  // matmul makes all the blocks' shift / scale / gate chunks (instead of a small matmul a block).
  kernels::QuantizedMatrix ada;
  gpu::Buffer pos;  // f32 [tokens][C], dequantized once
  std::vector<Block> blocks;
};

struct SsFlowModel::Buffers {
  gpu::Buffer x, tfreq, temb_a, temb, mods, h, hn, qkv, att, mlp, out, ctx;
  gpu::Buffer split_partials;  // split-K partial products (mlp.2, and the C x C matmuls), one at a time
  gpu::Buffer x_quant;         // the int8 path's quantized activations, one matmul at a time
  std::vector<gpu::Buffer> kv;  // per block: cross-attention k|v of the context [2][ctx][2C]
  std::vector<kernels::Dispatch> context_graph;
};

namespace {

kernels::QuantizedMatrix linear(const gpu::Device& d, const TensorSource& s, const std::string& name) {
  return upload_linear(d, s.get(name + ".weight"), s.get(name + ".bias"));
}

// Matmuls with a small output, the timestep path's (t_embedder, adaLN_modulation: 1 or 2 tokens) and
// out_layer (8 rows): small tiles and every 64-column group its own K chunk, or the default 128 x 128
// tiles leave the GPU nearly idle through a long K loop (measured several times faster for
// adaLN_modulation, and faster for out_layer at both batches, sum pass included).
kernels::QMatmulGeometry small_output_geometry(const kernels::QuantizedMatrix& w) {
  return {.wg_tokens = 4, .wg_rows = 16, .k_step = 16, .k_splits = w.padded_cols / 64};
}

uint64_t small_output_split_floats(const kernels::QuantizedMatrix& w, uint32_t tokens) {
  return kernels::qmatmul_split_floats(w, tokens, small_output_geometry(w).k_splits);
}

}  // namespace

SsFlowModel::SsFlowModel(gpu::KernelCache& kernels, const TensorSource& s, const SsFlowOptions& options)
    : kernels_(kernels), options_(options), config_(ss_flow_config_of(s)), w_(std::make_unique<Weights>()),
      b_(std::make_unique<Buffers>()) {
  const gpu::Device& d = kernels.device();
  fit_options();
  w_->t0 = linear(d, s, "t_embedder.mlp.0");
  w_->t2 = linear(d, s, "t_embedder.mlp.2");
  w_->input = linear(d, s, "input_layer");
  w_->out = linear(d, s, "out_layer");
  w_->pos = upload_as_f32(d, s.get("pos_emb"));
  std::vector<LinearView> ada;
  for (int64_t i = 0; i < config_.num_blocks; i++) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    ada.push_back({s.get(p + "adaLN_modulation.1.weight"), s.get(p + "adaLN_modulation.1.bias")});
    Weights::Block b;
    b.qkv = linear(d, s, p + "self_attn.to_qkv");
    b.self_out = linear(d, s, p + "self_attn.to_out");
    b.q = linear(d, s, p + "cross_attn.to_q");
    b.kv = linear(d, s, p + "cross_attn.to_kv");
    b.cross_out = linear(d, s, p + "cross_attn.to_out");
    b.mlp0 = linear(d, s, p + "mlp.mlp.0");
    b.mlp2 = linear(d, s, p + "mlp.mlp.2");
    b.gamma_q = upload_raw(d, s.get(p + "self_attn.q_rms_norm.gamma"));
    b.gamma_k = upload_raw(d, s.get(p + "self_attn.k_rms_norm.gamma"));
    b.norm2_w = upload_raw(d, s.get(p + "norm2.weight"));
    b.norm2_b = upload_raw(d, s.get(p + "norm2.bias"));
    w_->blocks.push_back(std::move(b));
  }
  if (!ada.empty()) w_->ada = upload_stacked_linears(d, ada, "blocks.*.adaLN_modulation.1");
  const uint64_t N = uint64_t(config_.tokens()), C = uint64_t(config_.model_channels), B = 2;
  auto buf = [&](uint64_t floats, const char* name) { return d.create_storage(floats * 4, std::string("ss_flow ") + name); };
  b_->x = buf(B * N * uint64_t(config_.in_channels), "input");
  b_->tfreq = buf(B * SsFlowConfig::kFreqDim, "t_freq");
  b_->temb_a = buf(B * C, "t_emb hidden");
  b_->temb = buf(B * C, "t_emb");
  b_->mods = buf(B * mod_stride(), "modulation");
  b_->h = buf(B * N * C, "h");
  b_->hn = buf(B * N * C, "h normed");
  b_->qkv = buf(B * N * 3 * C, "qkv");
  b_->att = buf(B * N * C, "attention");
  b_->mlp = buf(B * N * uint64_t(config_.mlp_channels()), "mlp hidden");
  b_->out = buf(B * N * uint64_t(config_.out_channels), "output");
  allocate_scratch();
}

void SsFlowModel::fit_options() {
  const gpu::Device& d = kernels_.device();
  using kernels::FlashVariant;
  if (!d.has_subgroups()) options_.subgroups = false;
  // A lane quad (oct: octet; tiled: a row group of 8 lanes) must sit inside one subgroup.
  if ((options_.attention == FlashVariant::Tiled || options_.attention == FlashVariant::Oct) &&
      (!d.has_subgroups() || d.subgroup_size() % 8 != 0))
    options_.attention = FlashVariant::Quad;
  if (options_.attention == FlashVariant::Quad && (!d.has_subgroups() || d.subgroup_size() % 4 != 0))
    options_.attention = FlashVariant::Plain;
  if (!kernels::tile_prefetch_fits(options_.attention_queries, options_.attention_keys)) options_.attention_prefetch = false;
  if (options_.attention == FlashVariant::Tiled) {
    auto& g = options_.attention_tiled;
    const uint32_t limit = d.limits().maxComputeWorkgroupStorageSize, head_dim = uint32_t(config_.model_channels / config_.num_heads);
    if (kernels::flash_tiled_workgroup_bytes(g, head_dim) > limit) g.keys_per_thread = 4;
    while (kernels::flash_tiled_workgroup_bytes(g, head_dim) > limit && g.queries > g.queries_per_thread) g.queries /= 2;
  }
  // The int8 path needs the WGSL language feature; without it every matmul runs the f32 one.
  if (!d.adapter().dot4_i8_packed) {
    options_.int8 = false;
    for (auto& [region, g] : options_.matmul_overrides) g.int8 = false;
  }
}

// Scratch shared by the matmuls one at a time: split-K partials (and the key-split attention's),
// and with the int8 path the quantized activations.
void SsFlowModel::allocate_scratch() {
  b_->split_partials = {};
  b_->x_quant = {};
  if (w_->blocks.empty()) return;
  const gpu::Device& d = kernels_.device();
  const uint32_t N = uint32_t(config_.tokens()), B = 2;
  const auto& w0 = w_->blocks.front();
  uint64_t floats = std::max({kernels::qmatmul_split_floats(w0.mlp2, B * N, mlp2_splits(2)),
                              kernels::qmatmul_split_floats(w0.mlp2, N, mlp2_splits(1)),
                              kernels::qmatmul_split_floats(w0.self_out, B * N, options_.square_k_splits),
                              small_output_split_floats(w_->ada, B), small_output_split_floats(w_->t0, B),
                              small_output_split_floats(w_->t2, B), small_output_split_floats(w_->out, B * N),
                              kernels::flash_partials_floats(self_attention_args(1))});
  bool int8 = options_.int8;
  for (const auto& [region, g] : options_.matmul_overrides) {  // a bound: the widest matrix (mlp.0) at batch 2
    floats = std::max(floats, kernels::qmatmul_split_floats(w0.mlp0, B * N, g.k_splits));
    int8 = int8 || g.int8;
  }
  if (floats) b_->split_partials = d.create_storage(floats * 4, "ss_flow split-K partials");
  // The longest K (mlp.2) at batch 2 bounds every block linear's quantized input.
  if (int8) b_->x_quant = d.create_storage(kernels::qmatmul_quant_bytes(w0.mlp2, B * N), "ss_flow int8 activations");
}

void SsFlowModel::set_options(const SsFlowOptions& options) {
  options_ = options;
  fit_options();
  allocate_scratch();
  if (ctx_tokens_ > 0) {
    build_graphs();
    gpu::Recorder rec(device());
    for (const auto& k : b_->context_graph) k.record(rec);
    rec.submit();
  }
}

SsFlowModel::~SsFlowModel() = default;

const gpu::Device& SsFlowModel::device() const { return kernels_.device(); }
const gpu::Buffer& SsFlowModel::input() const { return b_->x; }
const gpu::Buffer& SsFlowModel::output() const { return b_->out; }

void SsFlowModel::set_context(std::span<const float> cond, std::span<const float> neg, int64_t ctx_tokens) {
  const int64_t Cc = config_.cond_channels;
  if (ctx_tokens < 1) throw Error("the context needs at least one token", "ss-flow context");
  if (int64_t(cond.size()) != ctx_tokens * Cc || (!neg.empty() && int64_t(neg.size()) != ctx_tokens * Cc))
    throw Error("context size does not match " + std::to_string(ctx_tokens) + " x " + std::to_string(Cc), "ss-flow context");
  const gpu::Device& d = device();
  if (ctx_tokens != ctx_tokens_) {
    ctx_tokens_ = ctx_tokens;
    b_->ctx = d.create_storage(uint64_t(2 * ctx_tokens * Cc) * 4, "ss_flow context");
    b_->kv.clear();
    for (int64_t i = 0; i < config_.num_blocks; i++)
      b_->kv.push_back(d.create_storage(uint64_t(2 * ctx_tokens * 2 * config_.model_channels) * 4, "ss_flow cross k|v"));
    build_graphs();
  }
  d.upload(b_->ctx, cond, 0);
  if (!neg.empty()) d.upload(b_->ctx, neg, uint64_t(ctx_tokens * Cc) * 4);
  gpu::Recorder rec(d);
  for (const auto& k : b_->context_graph) k.record(rec);
  rec.submit();
}

void SsFlowModel::set_timesteps(const std::vector<double>& t) const {
  std::vector<float> f;
  for (double ti : t) {
    auto e = timestep_embedding(ti);
    f.insert(f.end(), e.begin(), e.end());
  }
  device().upload(b_->tfreq, std::span<const float>(f));
}

void SsFlowModel::build_graphs() {
  using kernels::Epilogue;
  const uint32_t N = uint32_t(config_.tokens()), C = uint32_t(config_.model_channels), H = uint32_t(config_.num_heads);
  const uint32_t F = uint32_t(config_.mlp_channels()), L = uint32_t(ctx_tokens_);
  auto& K = kernels_;
  const auto geo = options_.matmul;
  auto mm_args = [&](const gpu::Buffer& x, uint32_t xs, const kernels::QuantizedMatrix& w, const gpu::Buffer& y, uint32_t ys,
                     uint32_t tokens, Epilogue e = Epilogue::None, const gpu::Buffer* extra = nullptr, uint32_t gate_offset = 0) {
    return kernels::QMatmulArgs{.x = &x, .x_stride = xs, .w = &w, .y = &y, .y_stride = ys, .tokens = tokens, .epilogue = e,
                                .extra = extra, .tokens_per_batch = N, .gate_stride = mod_stride(), .gate_offset = gate_offset,
                                .add_period = N, .geometry = geo, .split_partials = &b_->split_partials,
                                .x_quant = &b_->x_quant};
  };
  std::set<std::string> overridden, regions;  // the overrides that matched; every matmul's region
  b_->context_graph.clear();
  for (size_t i = 0; i < w_->blocks.size(); i++)
    b_->context_graph.push_back(
        kernels::qmatmul(K, mm_args(b_->ctx, uint32_t(config_.cond_channels), w_->blocks[i].kv, b_->kv[i], 2 * C, 2 * L), "cross_attn.to_kv"));
  for (int bi = 0; bi < 2; bi++) {
    const uint32_t B = uint32_t(bi + 1), T = B * N;
    auto& g = graph_[bi];
    g.clear();
    // Every matmul of the forward: its geometry overridden where options_.matmul_overrides names it,
    // with its split-K sum pass if any.
    // block: one of the block linears, which options_.int8 puts on the int8 path.
    auto push_matmul = [&](kernels::QMatmulArgs a, const std::string& region, bool block = false) {
      if (block && options_.int8) a.geometry.int8 = true;
      const auto& o = options_.matmul_overrides;
      regions.insert(region);
      auto it = o.find(region + "@" + std::to_string(B));
      if (it == o.end()) it = o.find(region);
      if (it != o.end()) {
        a.geometry = it->second;
        overridden.insert(it->first);
      }
      for (auto& d : kernels::qmatmul_dispatches(K, a, region)) g.push_back(std::move(d));
    };
    // The C x C matmuls (K = C, few output tiles), split-K where options_.square_k_splits > 1.
    auto push_square = [&](kernels::QMatmulArgs a, const std::string& region) {
      if (options_.narrow_matmul) a.geometry = *options_.narrow_matmul;
      a.geometry.k_splits = options_.square_k_splits;
      push_matmul(a, region, true);
    };
    auto push_small_output = [&](kernels::QMatmulArgs a, const std::string& region) {
      a.geometry = small_output_geometry(*a.w);
      push_matmul(a, region);
    };
    push_small_output(mm_args(b_->tfreq, SsFlowConfig::kFreqDim, w_->t0, b_->temb_a, C, B), "t_embedder.mlp.0");
    g.push_back(kernels::activation(K, kernels::Activation::Silu, b_->temb_a, B * C, "t_embedder.silu"));
    push_small_output(mm_args(b_->temb_a, C, w_->t2, b_->temb, C, B), "t_embedder.mlp.2");
    g.push_back(kernels::activation(K, kernels::Activation::Silu, b_->temb, B * C, "adaLN.silu"));
    if (!w_->blocks.empty()) push_small_output(mm_args(b_->temb, C, w_->ada, b_->mods, mod_stride(), B), "adaLN_modulation");
    timestep_end_[bi] = g.size();
    push_matmul(mm_args(b_->x, uint32_t(config_.in_channels), w_->input, b_->h, C, T, Epilogue::AddRows, &w_->pos), "input_layer+pos_emb");
    context_free_end_[bi] = g.size();
    // Block i's modulation chunk k (0..5: shift, scale, gate of the attention, then of the MLP) in mods.
    auto mod = [&](size_t i, uint32_t k) { return uint32_t(6 * i + k) * C; };
    auto norm = [&](const gpu::Buffer* mods, uint32_t shift, uint32_t scale, const gpu::Buffer* wgt, const gpu::Buffer* bias,
                    float eps, const std::string& region) {
      return kernels::layer_norm(K, {.x = &b_->h, .y = &b_->hn, .rows = T, .channels = C, .eps = eps, .weight = wgt, .bias = bias,
                                     .mods = mods, .tokens_per_batch = N, .mod_stride = mod_stride(), .shift_offset = shift,
                                     .scale_offset = scale, .subgroups = options_.subgroups},
                                 region);
    };
    for (size_t i = 0; i < w_->blocks.size(); i++) {
      const auto& w = w_->blocks[i];
      // x += gate_msa * SelfAttn(m(norm1(x)))
      g.push_back(norm(&b_->mods, mod(i, 0), mod(i, 1), nullptr, nullptr, 1e-6f, "norm1+modulate"));
      auto qkv = mm_args(b_->hn, C, w.qkv, b_->qkv, 3 * C, T);
      if (B == 1 && options_.narrow_matmul) qkv.geometry = *options_.narrow_matmul;  // half the tiles of batch 2
      push_matmul(qkv, "self_attn.to_qkv", true);
      g.push_back(kernels::head_rms_norm(K, {.x = &b_->qkv, .gamma_q = &w.gamma_q, .gamma_k = &w.gamma_k, .rows = T, .heads = H,
                                             .stride = 3 * C, .q_offset = 0, .k_offset = C, .subgroups = options_.subgroups},
                                         "self_attn.qk_rms_norm"));
      for (auto& d : kernels::flash_attention_dispatches(K, self_attention_args(B), "self_attn.flash")) g.push_back(std::move(d));
      push_square(mm_args(b_->att, C, w.self_out, b_->h, C, T, Epilogue::GatedResidual, &b_->mods, mod(i, 2)), "self_attn.to_out+gate");
      if (i == 0) context_free_end_[bi] = g.size();
      // x += CrossAttn(norm2(x), cond)
      g.push_back(norm(nullptr, 0, 0, &w.norm2_w, &w.norm2_b, 1e-6f, "norm2"));
      push_square(mm_args(b_->hn, C, w.q, b_->qkv, C, T), "cross_attn.to_q");
      auto cross = attention_args(B, L, options_.cross_attention_keys);
      cross.q = &b_->qkv;
      cross.kv = &b_->kv[i];
      cross.q_stride = C;
      cross.kv_stride = 2 * C;
      cross.v_offset = C;
      g.push_back(kernels::flash_attention(K, cross, "cross_attn.flash"));
      push_square(mm_args(b_->att, C, w.cross_out, b_->h, C, T, Epilogue::Residual), "cross_attn.to_out+residual");
      // x += gate_mlp * MLP(m(norm3(x)))
      g.push_back(norm(&b_->mods, mod(i, 3), mod(i, 4), nullptr, nullptr, 1e-6f, "norm3+modulate"));
      if (options_.fuse_gelu) {
        push_matmul(mm_args(b_->hn, C, w.mlp0, b_->mlp, F, T, Epilogue::Gelu), "mlp.0+gelu", true);
      } else {
        auto mlp0 = mm_args(b_->hn, C, w.mlp0, b_->mlp, F, T);
        mlp0.geometry.rows_per_thread = options_.mlp0_rows_per_thread;
        push_matmul(mlp0, "mlp.0", true);
        g.push_back(kernels::activation(K, kernels::Activation::GeluTanh, b_->mlp, T * F, "mlp.gelu"));
      }
      auto mlp2 = mm_args(b_->mlp, F, w.mlp2, b_->h, C, T, Epilogue::GatedResidual, &b_->mods, mod(i, 5));
      mlp2.geometry.k_splits = mlp2_splits(B);
      if (B == 2) mlp2.geometry.rows_per_thread = options_.mlp2_rows_per_thread;
      push_matmul(mlp2, "mlp.2+gate", true);
    }
    g.push_back(norm(nullptr, 0, 0, nullptr, nullptr, 1e-5f, "final_norm"));
    push_small_output(mm_args(b_->hn, C, w_->out, b_->out, uint32_t(config_.out_channels), T), "out_layer");
  }
  for (const auto& [name, g] : options_.matmul_overrides)
    if (!overridden.count(name)) {
      std::string known;
      for (const auto& r : regions) known += (known.empty() ? "" : ", ") + r;
      throw Error("no matmul of the forward is named '" + name + "'", "ss-flow matmul override", "name one of: " + known + " (optionally @1 or @2)");
    }
}

// The options' attention kernel over `batch` x 4096 queries of C/64 heads into att, q at offset 0:
// the caller names the q and k/v buffers and their layout.
kernels::FlashAttentionArgs SsFlowModel::attention_args(uint32_t batch, uint32_t keys, uint32_t keys_per_tile) const {
  kernels::FlashAttentionArgs a{.q = nullptr, .kv = nullptr, .out = &b_->att, .batch = batch, .heads = uint32_t(config_.num_heads),
                                .nq = uint32_t(config_.tokens()), .nk = keys, .q_stride = 0, .q_offset = 0, .kv_stride = 0,
                                .k_offset = 0, .v_offset = 0, .o_stride = uint32_t(config_.model_channels), .scale = 0.125f,
                                .variant = options_.attention, .queries_per_workgroup = options_.attention_queries,
                                .keys_per_tile = keys_per_tile,
                                .prefetch_tile = options_.attention_prefetch &&
                                                 kernels::tile_prefetch_fits(options_.attention_queries, keys_per_tile),
                                .tiled = options_.attention_tiled, .partials = &b_->split_partials,
                                .lazy_rescale = options_.attention_lazy_rescale, .fused_pv = options_.attention_fused_pv};
  return a;
}

// At batch 1 the self attention's 128-query workgroups (384 for 4096 tokens x 12 heads) leave the last
// wave of a large GPU half empty. The oct kernel splits the keys in two instead, as many workgroups as
// at batch 2 at the same efficiency, plus a merge pass; the quad kernel (or oct with one split) runs
// half the queries per workgroup (measured faster at batch 1; at batch 2, 64 is slower).
kernels::FlashAttentionArgs SsFlowModel::self_attention_args(uint32_t batch) const {
  const uint32_t N = uint32_t(config_.tokens()), C = uint32_t(config_.model_channels);
  kernels::FlashAttentionArgs a = attention_args(batch, N, options_.attention_keys);
  a.q = a.kv = &b_->qkv;
  a.q_stride = a.kv_stride = 3 * C;
  a.k_offset = C;
  a.v_offset = 2 * C;
  if (batch != 1) return a;
  const auto v = options_.attention;
  if (v == kernels::FlashVariant::Oct && options_.attention_key_splits > 1) {
    a.key_splits = options_.attention_key_splits;
    return a;
  }
  const uint32_t q = a.queries_per_workgroup;
  const uint32_t lanes = v == kernels::FlashVariant::Quad ? 4 : v == kernels::FlashVariant::Oct ? 8 : 0;
  if (lanes && q >= 64 && q % (2 * lanes) == 0 && (!a.prefetch_tile || kernels::tile_prefetch_fits(q / 2, a.keys_per_tile)))
    a.queries_per_workgroup = q / 2;
  return a;
}

uint32_t SsFlowModel::mod_stride() const { return uint32_t(6 * config_.model_channels * config_.num_blocks); }

// mlp.2 at batch 1 has half the output tiles: twice the K chunks, where its 64-column groups allow
// (measured faster at batch 1 with 4 than with 2; at batch 2, 3 and 4 are no better).
uint32_t SsFlowModel::mlp2_splits(uint32_t batch) const {
  const uint32_t s = options_.mlp2_k_splits, groups = uint32_t(config_.mlp_channels() / 64);
  return batch == 1 && s > 1 && 2 * s <= groups ? 2 * s : s;
}

void SsFlowModel::record_forward(gpu::Recorder& rec, int batch) const {
  if (batch != 1 && batch != 2) throw Error("ss-flow runs at batch 1 or 2, not " + std::to_string(batch), "ss-flow forward");
  if (ctx_tokens_ == 0) throw Error("no context set", "ss-flow forward", "call set_context first");
  for (const auto& k : graph_[batch - 1]) k.record(rec);
}

void SsFlowModel::record_guided_forward(gpu::Recorder& rec) const {
  if (ctx_tokens_ == 0) throw Error("no context set", "ss-flow forward", "call set_context first");
  const auto &one = graph_[0], &two = graph_[1];
  // Both rows' modulations (the timesteps are set for 2 rows), then row 0 alone up to the context.
  for (size_t i = 0; i < timestep_end_[1]; i++) two[i].record(rec);
  for (size_t i = timestep_end_[0]; i < context_free_end_[0]; i++) one[i].record(rec);
  // Row 0's hidden state to row 1, through hn (a buffer copies to another, not to itself; the next
  // dispatch, a norm, overwrites hn).
  const uint64_t row = uint64_t(config_.tokens() * config_.model_channels) * 4;
  rec.copy(b_->h, 0, b_->hn, 0, row);
  rec.copy(b_->hn, 0, b_->h, row, row);
  for (size_t i = context_free_end_[1]; i < two.size(); i++) two[i].record(rec);
}

std::vector<float> SsFlowModel::forward(const std::vector<float>& x, const std::vector<double>& t, gpu::Profiler* profiler) {
  const int B = int(t.size());
  const int64_t N = config_.tokens(), Cin = config_.in_channels, Cout = config_.out_channels;
  if ((B != 1 && B != 2) || int64_t(x.size()) != B * Cin * N)
    throw Error("forward takes 1 or 2 latents of " + std::to_string(Cin) + "x" + std::to_string(N), "ss-flow forward");
  std::vector<float> xt;
  for (int b = 0; b < B; b++) {
    auto r = to_tokens(std::span<const float>(x).subspan(size_t(b * Cin * N), size_t(Cin * N)), Cin, N);
    xt.insert(xt.end(), r.begin(), r.end());
  }
  device().upload(b_->x, std::span<const float>(xt));
  set_timesteps(t);
  gpu::Recorder rec(device(), profiler);
  record_forward(rec, B);
  rec.submit();
  auto out = device().download_as<float>(b_->out, 0, uint64_t(B * N * Cout));
  std::vector<float> v;
  for (int b = 0; b < B; b++) {
    auto r = from_tokens(std::span<const float>(out).subspan(size_t(b * N * Cout), size_t(N * Cout)), Cout, N);
    v.insert(v.end(), r.begin(), r.end());
  }
  return v;
}

double SsFlowModel::flops(int batch) const {
  const double N = double(config_.tokens()) * batch, C = double(config_.model_channels), F = double(config_.mlp_channels());
  const double per_block = 2 * N * C * (3 * C + C + C + C + 2 * F)  // to_qkv, to_out, to_q, cross to_out, mlp
                           + 4 * N * double(config_.tokens()) * C     // self-attention QK^T and PV
                           + 4 * N * double(ctx_tokens_) * C;         // cross-attention
  return per_block * double(config_.num_blocks) + 2 * N * C * double(config_.in_channels + config_.out_channels);
}

std::map<std::string, double> SsFlowModel::region_flops(int batch) const {
  const double N = double(config_.tokens()) * batch, C = double(config_.model_channels), F = double(config_.mlp_channels());
  const double blocks = double(config_.num_blocks), square = 2 * N * C * C * blocks;
  return {{"input_layer+pos_emb", 2 * N * C * double(config_.in_channels)},
          {"self_attn.to_qkv", 3 * square},
          {"self_attn.flash", 4 * N * double(config_.tokens()) * C * blocks},
          {"self_attn.to_out+gate", square},
          {"cross_attn.to_q", square},
          {"cross_attn.flash", 4 * N * double(ctx_tokens_) * C * blocks},
          {"cross_attn.to_out+residual", square},
          {options_.fuse_gelu ? "mlp.0+gelu" : "mlp.0", 2 * N * C * F * blocks},
          {"mlp.2+gate", 2 * N * C * F * blocks},
          {"out_layer", 2 * N * C * double(config_.out_channels)}};
}

std::vector<float> to_tokens(std::span<const float> latent, int64_t channels, int64_t tokens) {
  std::vector<float> out(size_t(channels * tokens));
  for (int64_t c = 0; c < channels; c++)
    for (int64_t n = 0; n < tokens; n++) out[size_t(n * channels + c)] = latent[size_t(c * tokens + n)];
  return out;
}

std::vector<float> from_tokens(std::span<const float> tm, int64_t channels, int64_t tokens) {
  std::vector<float> out(size_t(channels * tokens));
  for (int64_t c = 0; c < channels; c++)
    for (int64_t n = 0; n < tokens; n++) out[size_t(c * tokens + n)] = tm[size_t(n * channels + c)];
  return out;
}

std::vector<float> timestep_embedding(double t) {
  std::vector<float> f(SsFlowConfig::kFreqDim);
  const double T = 1000.0 * t;
  const int half = int(SsFlowConfig::kFreqDim / 2);
  for (int i = 0; i < half; i++) {
    const double arg = T * std::exp(-std::log(10000.0) * i / half);
    f[size_t(i)] = float(std::cos(arg));
    f[size_t(half + i)] = float(std::sin(arg));
  }
  return f;
}

}  // namespace ember::trellis
