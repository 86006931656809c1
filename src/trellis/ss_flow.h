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

struct SsFlowOptions {
  kernels::QMatmulGeometry matmul{};
  // The matmuls that make few output tiles at 128 x 128: the C x C ones (self to_out, cross to_q,
  // cross to_out) and to_qkv at batch 1. Their workgroup geometry where it differs from `matmul`
  // (k_splits ignored, see below): 128 tokens x 64 rows, twice the tiles. Measured faster for these
  // than 128 x 128 tiles split 2 at both batches; mlp.2 (K = 3072) measured slower with it, so it
  // keeps 128 x 128 (bench/PERFORMANCE.md).
  std::optional<kernels::QMatmulGeometry> narrow_matmul = kernels::QMatmulGeometry{.wg_tokens = 16, .wg_rows = 8, .k_step = 16};
  // mlp.2: split-K chunks at batch 2 (batch 1 runs twice as many); 1 = none. 2 measured clearly
  // faster than unsplit at batch 2, even with its sum pass; 3, 4 and 6 no better.
  uint32_t mlp2_k_splits = 2;
  // The C x C matmuls: split-K chunks (1 = none). At 128 x 128 tiles 2 measured faster than 1 or 3;
  // unsplit at 128 x 64 tiles (above) is faster still, hence 1.
  uint32_t square_k_splits = 1;
  // mlp.0 (3072 rows) at 16 rows a thread: measured faster at both batches; the other shapes were
  // no faster (to_qkv, the C x C ones slower).
  uint32_t mlp0_rows_per_thread = 16;
  // mlp.2 (768 rows, K = 3072) at batch 2 at 16 rows a thread (half the output tiles, each split
  // in mlp2_k_splits): measured faster than 8. Batch 1 keeps 8 (not measured there).
  uint32_t mlp2_rows_per_thread = 16;
  // Flash attention: the oct variant where the device has subgroups of a multiple of 8 lanes, else
  // quad where it has subgroups, else plain; or the tiled one where asked for (its geometry shrunk
  // to fit the device's workgroup memory). Oct measured clearly faster than quad (each K or V
  // vec4 read from workgroup memory feeds twice the FMAs).
  kernels::FlashVariant attention = kernels::FlashVariant::Oct;
  // Plain, quad and oct: queries per workgroup at batch 2 (measured: 128 fastest, then 64, then 32;
  // oct: 128, then 256, then 64);
  // the quad and oct batch-1 self attention runs half as many, so it launches as many workgroups as
  // at batch 2.
  uint32_t attention_queries = 128;
  uint32_t attention_keys = 32;      // quad, oct: keys per workgroup-memory tile (oct: 16 and 64 slower)
  // oct: the batch-1 self attention's keys split over this many workgroups per query block (merged
  // after), so it launches as many workgroups as batch 2 at batch 2's queries per workgroup; 1: half
  // the queries per workgroup instead (see SsFlowModel::self_attention_args). 2 measured fastest,
  // 4 close behind, 1 clearly slower.
  uint32_t attention_key_splits = 2;
  // oct: rescale the accumulators only when a running max grows by more than 2^8 (skips ~9 of ~175
  // instructions a key): measured a little faster at both batches.
  bool attention_lazy_rescale = true;
  // oct: each key's exponentials gathered and used at once: measured slower at both batches.
  bool attention_fused_pv = false;
  // quad, oct: keys per tile of the cross attention (77 context tokens: 40 computes 80, 32 computes
  // 96). 40 measured fastest of 16, 32, 40 and 80.
  uint32_t cross_attention_keys = 40;
  // quad, oct: the next K/V tile read into registers during the current one: measured faster for
  // both kernels, most at batch 1 (with it, BQ 64 or BK 64 are still slower).
  bool attention_prefetch = true;
  kernels::FlashTiledGeometry attention_tiled{};
  bool subgroups = true;            // use subgroup reductions where the device has them
  // GELU fused into the mlp.0 matmul's epilogue. Off by default: on NVIDIA through Vulkan the
  // fused variant ran many times slower, apparently because its accumulators left registers, while
  // a separate in-place GELU pass costs a small fraction of the matmul. Applied as mlp.2 stores its
  // X tile instead, it measured no faster than the pass.
  bool fuse_gelu = false;
  // Per-matmul geometry by profile region ("mlp.0", "self_attn.to_qkv", ...), or "REGION@B" at batch
  // B only; it replaces the rules above for that matmul (sweeps: ember bench ss-flow --matmul-override).
  std::map<std::string, kernels::QMatmulGeometry> matmul_overrides;
};

class SsFlowModel {
 public:
  SsFlowModel(gpu::KernelCache& kernels, const TensorSource& source, const SsFlowOptions& options = {});
  ~SsFlowModel();
  SsFlowModel(const SsFlowModel&) = delete;
  SsFlowModel& operator=(const SsFlowModel&) = delete;

  const SsFlowConfig& config() const { return config_; }
  const SsFlowOptions& options() const { return options_; }  // as used: fitted to the device
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

 private:
  struct Weights;
  struct Buffers;
  void build_graphs();
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
