// The LFM2 model on the GPU: a pack's weights, the caches of one sequence, and the graph of one
// step (transformers' Lfm2ForCausalLM, docs/models.md), built from kernel families that know nothing
// of models. Decode runs one token per submit with matvec kernels; prefill runs chunks of the
// prompt with matrix-matrix kernels. Token ids live on the GPU (tokens()): decode embeds the id
// the sampler wrote there, so no CPU round trip sits between two tokens.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/llm_pack.h"
#include "gpu/kernel.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "kernels/dispatch.h"
#include "kernels/matvec_q4.h"
#include "kernels/matmul_q4.h"
#include "kernels/sampler.h"
#include "llm/kernel_choice.h"
#include "llm/lfm2_weights.h"
#include "llm/sequence_caches.h"

namespace ember::llm {

struct ModelOptions {
  // Tokens per prefill submit. Bounds activation memory: (7 hidden + qkv + 3 ffn) x 4 bytes per
  // token, 67.5 KB for the seed shape (17 MB at 256, 69 MB at 1024). `ember bench llm` runs its
  // prompt as one chunk.
  uint32_t prefill_chunk = 256;
  bool quiet = false;            // no loading progress on stderr
  // Where this sequence's KV caches and conv states live: slot `cache_slot` of `caches` (shared
  // with the other sequences a batched decoder steps together; its capacity and padding must be
  // the model's). Null: caches of its own.
  std::shared_ptr<SequenceCaches> caches;
  uint32_t cache_slot = 0;
};

class Lfm2Model {
 public:
  Lfm2Model(const gpu::Device& device, gpu::KernelCache& kernels, const formats::LlmPack& pack, const ModelOptions& options = {});
  // The same, on weights already on the GPU (uploaded from this pack's weights.bin): ember tune
  // builds models of several candidates on one upload.
  Lfm2Model(const gpu::Device& device, gpu::KernelCache& kernels, const formats::LlmPack& pack,
            std::shared_ptr<const Lfm2Weights> weights, const ModelOptions& options = {});
  // Another sequence of the same model: shares `other`'s GPU weights; its caches are its own or
  // a slot of options.caches.
  Lfm2Model(const Lfm2Model& other, const ModelOptions& options);

  // Caches for `slots` sequences of this pack on this device (ModelOptions::caches), shaped as
  // the model will need them: its capacity and the cache padding its kernel choices pick.
  static std::shared_ptr<SequenceCaches> make_caches(const gpu::Device& device, const formats::LlmPack& pack, uint32_t slots);
  // Positions one sequence of this pack can hold (capacity()).
  static uint32_t capacity_of(const formats::LlmPack& pack);
  ~Lfm2Model();
  Lfm2Model(const Lfm2Model&) = delete;
  Lfm2Model& operator=(const Lfm2Model&) = delete;

  const formats::LlmShape& shape() const { return pack_.shape(); }
  const KernelChoices& choices() const { return choices_; }
  // The sampler's first-stage workgroups (the pack's samplePartials): sampling.h's sampler_config.
  uint32_t sample_partials() const { return static_cast<uint32_t>(pack_.runtime().sample_partials); }
  uint32_t vocab() const { return static_cast<uint32_t>(shape().vocab); }
  // Positions one sequence can hold (prompt plus generated): the pack's maxTotalPositions,
  // bounded by the rope table.
  uint32_t capacity() const { return capacity_; }
  uint32_t position() const { return position_; }

  // Starts a new sequence: position 0, conv states and the residual MLP's hand-over words zeroed
  // (at the next step).
  void reset();
  // Continues the sequence from position n (0 = reset()): its caches must hold the KV of
  // positions [0, n) and the conv states after position n - 1, kept from earlier or copied into
  // its slot (the server's prompt reuse and n > 1). The conv states are left as they are.
  void set_position(uint32_t n);

  // Runs `ids` from the current position (chunked, one submit per chunk); the logits of the last
  // one are then in logits(). Also stores the ids in tokens(). Does not wait for the GPU.
  void prefill(std::span<const uint32_t> ids, gpu::Profiler* profiler = nullptr);

  // Like prefill(), but the logits of every position come out, in order: after each chunk,
  // `on_rows(first_position, rows)` gets f32 [n][vocab] for positions first..first+n-1 (a chunk,
  // or a part of it: at most 64 MiB, or `max_rows` rows, at a time). Each row goes through the
  // final norm and the head with the kernels prefill() uses for the last row. Waits for the GPU
  // each time. For checking ember against other implementations (`ember logits`).
  using LogitRows = std::function<void(uint32_t first_position, std::span<const float> rows)>;
  void prefill_logits(std::span<const uint32_t> ids, const LogitRows& on_rows, uint32_t max_rows = 0);

  // Records one decode step for the token at tokens()[position()] into `rec`. Leaves the logits
  // in logits(); advances position(). Several steps may go into one submit (up to kStepRing).
  void record_decode(gpu::Recorder& rec);
  // A sampler pick that embeds (kernels::SamplerConfig::embed_rows) writes the picked token's row
  // where the decode step reads its input and advances the step parameters, as the step's own
  // lookup would: pick_embedding() is where (the table, the input, the step buffer). After
  // recording such a pick right after a prefill or a decode step, call picked_embedded(): the
  // next record_decode then starts at the first layer.
  kernels::PickEmbedding pick_embedding() const;
  void picked_embedded();
  // Decode steps one submit may hold: each step's parameters have a slot of their own.
  static constexpr uint32_t kStepRing = 64;

  const gpu::Buffer& logits() const { return logits_; }  // f32 [vocab]
  const gpu::Buffer& tokens() const { return tokens_; }  // u32 [capacity]: the sequence's ids
  const gpu::Device& device() const { return device_; }
  gpu::KernelCache& kernels() const { return kernels_; }

  // The decode matvec of a matrix shape ("conv_in_proj", ..., "head") with its fusions (benchmarks
  // attribute bytes to its label).
  const kernels::MatvecQ4& decode_matvec(const std::string& shape_key) const;
  const kernels::MatvecQ4& prefill_head_matvec() const;  // the head as prefill's last token runs it
  const gpu::Kernel& prefill_attention_kernel() const;  // the causal attention kernel prefill runs

  // Whether decode runs each layer's out projection and MLP as one dispatch (residual_mlp_workgroups
  // in the choices, and the probe at load found the grid resident), and whether one of its waits
  // has given up since (its workgroups were not all resident: the logits since are wrong; reads
  // the status word back, so it waits for the GPU). Callers need not ask: record_decode hands the
  // status word to the recorder (gpu::Recorder::watch), so whatever reads the step's results back
  // (a gpu::ReadbackRing, a download, a wait) checks it and throws its error.
  bool residual_mlp() const { return residual_mlp_; }
  bool residual_mlp_failed() const;
  // Tests of the give-up path only: every later wait of the one-dispatch residual MLP gives up at
  // once (no effect without it). Survives reset().
  void stall_for_tests(bool stall) const;

  // Dispatches one decode step records, and its dependent stages: each dispatch is one, the
  // one-dispatch residual MLP three (its workgroups hand over twice inside it). For benchmarks and floors.
  size_t decode_dispatches() const { return decode_dispatches_; }
  size_t decode_stages() const;
  static constexpr size_t kResidualMlpStages = 3;  // dependent stages in one residual-MLP dispatch
  // Dispatches and submits (chunks) the last prefill recorded, all chunks together.
  size_t prefill_dispatches() const { return prefill_dispatches_; }
  size_t prefill_chunks() const { return prefill_chunks_; }
  // The prefill matmul of a shape key (conv_in_proj, ..., mlp_down): layout and geometry chosen.
  const kernels::MatmulConfig& prefill_matmul(const std::string& shape_key) const;
  // Weight bytes one decode step reads (every matrix once, the head, norms).
  uint64_t decode_weight_bytes() const;

  // The sequence's state, for a graph that records the decode of several sequences together
  // (Lfm2BatchDecoder): the shared weights and the caches this sequence occupies a slot of.
  const Lfm2Weights& weights() const { return *weights_; }
  const SequenceCaches& caches() const { return *caches_; }
  const std::shared_ptr<SequenceCaches>& shared_caches() const { return caches_; }
  uint32_t cache_slot() const { return options_.cache_slot; }
  gpu::Binding conv_state(size_t layer) const { return caches_->conv_state(layer, cache_slot()); }
  gpu::Binding k_cache(size_t layer) const { return caches_->k(layer, cache_slot()); }
  gpu::Binding v_cache(size_t layer) const { return caches_->v(layer, cache_slot()); }
  // Such a graph recorded the decode of tokens()[position()]: the sequence moves one position on.
  void advance_position() { position_++; }

 private:
  struct Ops;
  struct Layer;
  struct Chunk;  // bind groups of the T-dependent (matrix-matrix) kernels for one chunk size T

  void build();
  void build_residual_mlp();

  void upload_step(uint32_t start, uint32_t rows);
  void record_layers(gpu::Recorder& rec, uint32_t T, const Chunk* chunk);
  void record_head(gpu::Recorder& rec, uint32_t T, bool decode = false);
  const Chunk& chunk_for(uint32_t T);

  const gpu::Device& device_;
  gpu::KernelCache& kernels_;
  const formats::LlmPack& pack_;
  ModelOptions options_;
  KernelChoices choices_;
  std::shared_ptr<const Lfm2Weights> weights_;
  std::unique_ptr<Ops> ops_;
  std::vector<Layer> layers_;
  std::map<uint32_t, std::unique_ptr<Chunk>> chunks_;

  uint32_t capacity_ = 0, position_ = 0;
  bool clear_state_ = true;
  bool conv_step_fused_ = false;  // the decode conv step runs in the conv in_proj matvec
  bool prefill_gated_ = false;    // the prefill gate_up matmul applies silu * up itself
  bool residual_mlp_ = false;     // decode: out projection + MLP in one dispatch per layer
  uint32_t decode_steps_ = 0;     // StepParams::decode_step of the last recorded decode
  // start + rows of the StepParams that step_ will hold when the next recorded work runs, when
  // known: a decode step's embed advances step_ from there on the GPU (EmbedQ4::bind_decode).
  std::optional<uint32_t> step_next_;
  size_t decode_dispatches_ = 0;
  size_t prefill_dispatches_ = 0, prefill_chunks_ = 0;

  // Activations, [prefill_chunk] rows each (decode uses row 0).
  gpu::Buffer x_, h_, bcx_, qkv_, conv_y_, attn_, gu_, act_, x_last_, h_last_, chunk_ids_;
  gpu::BindGroup head_norm_;
  kernels::Bound head_mv_, decode_head_mv_;
  kernels::Dispatch decode_embed_;
  bool pick_embedded_ = false;  // position()'s token is embedded and the step parameters advanced
  gpu::Buffer logits_, tokens_, step_;
  // Decode after the position moved without step_ (a batched step, a reset): the StepParams that
  // lead to it, at slot position % kStepRing, copied into step_ inside the command stream (a queue
  // write lands before the submit's commands, so steps sharing a submit cannot share a slot).
  gpu::Buffer step_ring_;
  gpu::Buffer split_partials_;  // split-K prefill matmuls only
  // residual_mlp: per layer (residual_stride_ bytes apart) its tagged words, counters and stall
  // word; after them the status word all layers set (residual_status_).
  gpu::Buffer residual_scratch_;
  uint64_t residual_stride_ = 0, residual_status_offset_ = 0;
  gpu::StatusWord residual_status_;
  std::shared_ptr<SequenceCaches> caches_;
};

}  // namespace ember::llm
