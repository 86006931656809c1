// TRELLIS SparseStructureFlowModel on the GPU: weights from a stage (pack or memory) in GPU
// buffers, and the forward graph, which mirrors ModulatedTransformerCrossBlock block by block
// (docs/models.md). Dispatches and bind groups are built once per context length; a forward
// at batch 1 or 2 (conditional | unconditional) is then only recorded.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/ss_flow_config.h"
#include "gpu/kernel.h"
#include "gpu/recorder.h"
#include "kernels/dispatch.h"
#include "kernels/flash_attention.h"
#include "kernels/qmatmul.h"
#include "trellis/stage_tensors.h"

namespace ember::trellis {

using formats::SsFlowConfig;  // read from the stage's tensor shapes (trellis/ss_flow_stage.h)

// The stage's tuning choices. These defaults are what a device without a tuned candidate runs
// (trellis/ss_flow_candidate.h reads and writes them per device; `ember tune --stage` searches
// them); docs/ss_flow.md says what each is for. The model fits them to the device (subgroups,
// workgroup memory, the int8 language feature) and options() reports them as used.
struct SsFlowOptions {
  kernels::QMatmulGeometry matmul{};
  // The matmuls that make few output tiles: the C x C ones (self to_out, cross to_q, cross to_out)
  // and to_qkv at batch 1; unset: `matmul`. k_splits is ignored here (square_k_splits applies).
  std::optional<kernels::QMatmulGeometry> narrow_matmul = kernels::QMatmulGeometry{.wg_tokens = 16, .wg_rows = 8, .k_step = 16};
  // mlp.2 (K = 4C): split-K chunks at batch 2; batch 1 runs twice as many where the groups allow.
  uint32_t mlp2_k_splits = 2;
  uint32_t square_k_splits = 1;        // split-K chunks of the C x C matmuls (1 = none)
  uint32_t mlp0_rows_per_thread = 16;  // mlp.0 (4C rows): outputs per thread along rows
  uint32_t mlp2_rows_per_thread = 16;  // mlp.2 at batch 2: outputs per thread along rows (batch 1: 8)
  // The block linears (to_qkv, to_out, to_q, cross to_out, mlp.0, mlp.2) on packed int8 dot
  // products (qmatmul_i8.wgsl: activations quantized per token and 64-column group) with the
  // geometries above; off, or without the WGSL language feature packed_4x8_integer_dot_product,
  // the f32 path. Not bit-identical to f32: a candidate turns it on only after checking it.
  bool int8 = false;
  // Flash attention: oct where the device has subgroups of a multiple of 8 lanes, else quad where
  // it has subgroups, else plain; tiled where asked for (its geometry shrunk to fit the device's
  // workgroup memory).
  kernels::FlashVariant attention = kernels::FlashVariant::Oct;
  // Plain, quad and oct: queries per workgroup at batch 2; the quad (and oct with one key split)
  // batch-1 self attention runs half as many, so it launches as many workgroups as batch 2.
  uint32_t attention_queries = 128;
  uint32_t attention_keys = 32;  // quad, oct: keys per workgroup-memory tile
  // oct: the batch-1 self attention's keys split over this many workgroups per query block (merged
  // after); 1: half the queries per workgroup instead (see SsFlowModel::self_attention_args).
  uint32_t attention_key_splits = 2;
  // oct: rescale the accumulators only when a running max grows by more than 2^8.
  bool attention_lazy_rescale = true;
  bool attention_fused_pv = false;       // oct: each key's exponentials gathered and used at once
  uint32_t cross_attention_keys = 40;    // quad, oct: keys per tile of the cross attention
  bool attention_prefetch = true;        // quad, oct: the next K/V tile read into registers early
  kernels::FlashTiledGeometry attention_tiled{};
  bool subgroups = true;            // use subgroup reductions where the device has them
  // GELU fused into the mlp.0 matmul's epilogue instead of a separate in-place pass.
  bool fuse_gelu = false;
  // Per-matmul geometry by profile region ("mlp.0", "self_attn.to_qkv", ...), or "REGION@B" at batch
  // B only; it replaces the rules above for that matmul, int8 included (sweeps: ember bench
  // ss-flow --matmul-override; candidates).
  std::map<std::string, kernels::QMatmulGeometry> matmul_overrides;
  bool operator==(const SsFlowOptions&) const = default;
};

class SsFlowModel {
 public:
  SsFlowModel(gpu::KernelCache& kernels, const TensorSource& source, const SsFlowOptions& options = {});
  ~SsFlowModel();
  SsFlowModel(const SsFlowModel&) = delete;
  SsFlowModel& operator=(const SsFlowModel&) = delete;

  const SsFlowConfig& config() const { return config_; }
  const SsFlowOptions& options() const { return options_; }  // as used: fitted to the device
  // Rebuilds the forward under other options (fitted to the device), keeping the weights and the
  // context: what the tuner times choice after choice.
  void set_options(const SsFlowOptions& options);
  const gpu::Device& device() const;
  gpu::KernelCache& kernels() const { return kernels_; }

  // The text context of batch rows 0 (conditional) and 1 (unconditional, may be empty for batch-1
  // use): [ctx_tokens][cond_channels] f32 each. Computes every block's cross-attention k/v once.
  void set_context(std::span<const float> cond, std::span<const float> neg, int64_t ctx_tokens);
  int64_t context_tokens() const { return ctx_tokens_; }

  // GPU side, for the sampler: the input [batch][tokens][in_channels] and output
  // [batch][tokens][out_channels] (token-major, f32), and the timestep of each batch row.
  const gpu::Buffer& input() const;
  const gpu::Buffer& output() const;
  void set_timesteps(const std::vector<double>& t) const;  // t in [0, 1]; the model sees 1000 t
  void record_forward(gpu::Recorder& rec, int batch) const;
  // A guided sampler step: batch 2 whose two rows hold the same latent at the same timestep (only
  // row 0 of the input is read). The context first enters at block 0's cross attention, so what
  // comes before it is computed once, at batch 1, and copied to row 1.
  void record_guided_forward(gpu::Recorder& rec) const;

  // One forward from host data: x [B][in_channels][tokens] (latent layout), t [B] (B = 1 or 2),
  // context as set. Returns [B][out_channels][tokens].
  std::vector<float> forward(const std::vector<float>& x, const std::vector<double>& t, gpu::Profiler* profiler = nullptr);

  // Floating-point operations of one forward at `batch` (linear layers and attention).
  double flops(int batch) const;
  // The same per profile region of the forward (a matmul's ".quant" and ".sum" passes not
  // counted): what a benchmark divides by each kernel's time.
  std::map<std::string, double> region_flops(int batch) const;

 private:
  struct Weights;
  struct Buffers;
  void build_graphs();
  void fit_options();
  void allocate_scratch();
  kernels::FlashAttentionArgs attention_args(uint32_t batch, uint32_t keys, uint32_t keys_per_tile) const;
  kernels::FlashAttentionArgs self_attention_args(uint32_t batch) const;
  uint32_t mlp2_splits(uint32_t batch) const;
  uint32_t mod_stride() const;  // floats of a batch's row of modulations: 6 chunks of C per block

  gpu::KernelCache& kernels_;
  SsFlowOptions options_;
  SsFlowConfig config_;
  int64_t ctx_tokens_ = 0;
  std::unique_ptr<Weights> w_;
  std::unique_ptr<Buffers> b_;
  std::vector<kernels::Dispatch> graph_[2];  // batch 1, batch 2
  // Per graph: where the timestep-only dispatches (embedding, adaLN) end, and where block 0's self
  // attention ends (the last dispatch before the context is read).
  size_t timestep_end_[2] = {}, context_free_end_[2] = {};
};

// Latent layout [C][tokens] <-> token-major [tokens][C], for one batch row.
std::vector<float> to_tokens(std::span<const float> latent, int64_t channels, int64_t tokens);
std::vector<float> from_tokens(std::span<const float> tokens_major, int64_t channels, int64_t tokens);

// The timestep frequency embedding [cos(T g_i), sin(T g_i)] (T = 1000 t, g_i = 10000^(-i/128)),
// computed on the host in f64: WGSL sin/cos are only accurate within [-pi, pi].
std::vector<float> timestep_embedding(double t);

}  // namespace ember::trellis
