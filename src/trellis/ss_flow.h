// TRELLIS SparseStructureFlowModel on the GPU: weights from a stage (pack or memory) in GPU
// buffers, and the forward graph, which mirrors ModulatedTransformerCrossBlock block by block
// (DESIGN.md "TRELLIS"). Dispatches and bind groups are built once per context length; a forward
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
  // (k_splits ignored, see below): 128 tokens x 64 rows, twice the tiles. H200 (2026-12-04): the C x C
  // ones 12.9 ms per batch-2 forward at 128 x 128 split 2, 12.0 at 128 x 64 unsplit (batch 1: 54.6 ->
  // 53.2 ms per forward); to_qkv at batch 1 6.1 -> 5.5 ms. mlp.2 (K = 3072) was slower with it (14.2 ->
  // 14.7 ms at batch 2, split 2).
  std::optional<kernels::QMatmulGeometry> narrow_matmul = kernels::QMatmulGeometry{.wg_tokens = 16, .wg_rows = 8, .k_step = 16};
  // mlp.2: split-K chunks at batch 2 (batch 1 runs twice as many); 1 = none. H200, batch 2
  // (2026-12-03, 128 x 128 tiles): 21.2 ms per forward unsplit, 15.7 + 0.6 (sum pass) with 2; 3, 4, 6 no better.
  uint32_t mlp2_k_splits = 2;
  // The C x C matmuls: split-K chunks (1 = none). H200, batch 2 (2026-12-04, 128 x 128 tiles): 15.4 ms
  // per forward unsplit, 13.7 with 2, 15.4 with 3; unsplit at 128 x 64 tiles (above) is faster still.
  uint32_t square_k_splits = 1;
  // mlp.0 (3072 rows) at 16 rows a thread. H200 (2026-12-04): 13.9 -> 12.9 ms per batch-2 forward,
  // 7.1 -> 6.6 at batch 1; the other shapes were no faster (to_qkv, the C x C ones slower).
  uint32_t mlp0_rows_per_thread = 16;
  // mlp.2 (768 rows, K = 3072) at batch 2 at 16 rows a thread (half the output tiles, each split
  // in mlp2_k_splits). H100 (2026-12-05): 14.3 -> 13.3 ms per batch-2 forward. Batch 1 keeps 8.
  uint32_t mlp2_rows_per_thread = 16;
  // Flash attention: the oct variant where the device has subgroups of a multiple of 8 lanes, else
  // quad where it has subgroups, else plain; or the tiled one where asked for (its geometry shrunk
  // to fit the device's workgroup memory). H200, batch 2 (2026-12-04): self attention 45.2 ms per
  // forward with quad, 38.8 with oct.
  kernels::FlashVariant attention = kernels::FlashVariant::Oct;
  // Plain, quad and oct: queries per workgroup at batch 2 (H200: 128 > 64 > 32, oct 128 > 256 > 64);
  // the quad and oct batch-1 self attention runs half as many, so it launches as many workgroups as
  // at batch 2.
  uint32_t attention_queries = 128;
  uint32_t attention_keys = 32;      // quad, oct: keys per workgroup-memory tile (oct: 16 and 64 slower)
  // oct: the batch-1 self attention's keys split over this many workgroups per query block (merged
  // after), so it launches as many workgroups as batch 2 at batch 2's queries per workgroup; 1: half
  // the queries per workgroup instead (see SsFlowModel::self_attention_args). H100 (2026-12-05):
  // batch-1 self attention 22.4 ms per forward with 1, 19.2 with 2, 19.5 with 4.
  uint32_t attention_key_splits = 2;
  // oct: rescale the accumulators only when a running max grows by more than 2^8 (skips ~9 of ~175
  // instructions a key). H100 (2026-12-05): self attention 22.4 -> 21.7 ms per batch-1 forward,
  // 37.7 -> 37.2 at batch 2.
  bool attention_lazy_rescale = true;
  // oct: each key's exponentials gathered and used at once. H100 (2026-12-05): slower (batch 1
  // 22.4 -> 24.1 ms, batch 2 37.7 -> 38.1).
  bool attention_fused_pv = false;
  // quad, oct: keys per tile of the cross attention (77 context tokens: 40 computes 80). H100
  // (2026-12-05), batch 2: 1.47 ms per forward at 32, 1.33 at 40, 1.66 at 80, 1.48 at 16.
  uint32_t cross_attention_keys = 40;
  // quad, oct: the next K/V tile read into registers during the current one. H200, batch 2: quad
  // self attention 49.3 -> 47.0 ms per forward (BQ 64 or BK 64 with it: 53-54 ms); oct: 39.3 -> 38.8,
  // at batch 1 27.9 -> 22.8.
  bool attention_prefetch = true;
  kernels::FlashTiledGeometry attention_tiled{};
  bool subgroups = true;            // use subgroup reductions where the device has them
  // GELU fused into the mlp.0 matmul's epilogue. Off by default: on the H200 (NVIDIA Vulkan) the
  // fused variant ran 10x slower (8.7 ms vs 0.9 ms at 4096x3072x768), apparently its accumulators
  // left registers; a separate in-place GELU pass costs ~0.11 ms. Applied as mlp.2 stores its X
  // tile instead, it measured no faster than the pass (2026-12-04).
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
