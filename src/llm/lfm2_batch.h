// One decode step of several LFM2 sequences at once (the server's continuous batching). Each
// sequence is an Lfm2Model (its KV caches, conv states, position and token ids; all of them
// sharing one set of GPU weights) and owns one row of the batch buffers. The weight-heavy parts
// (embedding, RMSNorms, every projection, the head) run once over the rows with the batched
// matvec, so a step reads each weight once whatever the number of sequences; the parts that
// depend on a sequence's state (short conv, q/k norm + RoPE + KV write, attention) run as one
// dispatch over the stepping sequences, whose caches are slots of one SequenceCaches (row r =
// slot r). The graph is Lfm2Model's decode step (same kernels for everything but the projections,
// so the logits agree up to summation order).
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpu/recorder.h"
#include "llm/lfm2_model.h"

namespace ember::llm {

class Lfm2BatchDecoder {
 public:
  // sequences[r] owns row r and slot r of the caches they all share. All must come from one model
  // (Lfm2Model's copy constructor). Throws ember::Error when unsupported() says why not.
  explicit Lfm2BatchDecoder(std::vector<Lfm2Model*> sequences);
  ~Lfm2BatchDecoder();
  Lfm2BatchDecoder(const Lfm2BatchDecoder&) = delete;
  Lfm2BatchDecoder& operator=(const Lfm2BatchDecoder&) = delete;

  // Empty when this model (its caches) can be batched on its device, else the reason: every row of
  // a batch buffer is bound at its own offset, which must be a multiple of the device's
  // minStorageBufferOffsetAlignment, and a whole layer's caches must fit one binding.
  static std::string unsupported(const Lfm2Model& model);

  // Records one decode step of the sequences `rows` (distinct row indices): each decodes the
  // token at its tokens()[position()] (it must have been prefilled), leaves its logits in row r of
  // logits() and moves one position on. The caller submits before recording the next step.
  void record(gpu::Recorder& rec, std::span<const uint32_t> rows);

  uint32_t rows() const { return static_cast<uint32_t>(sequences_.size()); }
  const gpu::Buffer& logits() const { return logits_; }  // f32 [rows()][vocab]
  gpu::Binding logits_row(uint32_t r) const;             // row r of logits()
  const Lfm2Plan& plan() const { return plan_; }          // what record() records (lfm2_plan.h)

 private:
  struct Ops;
  struct Layer;
  struct Width;  // the batched matvec bind groups for the first T rows

  const Width& width_for(uint32_t T);

  std::vector<Lfm2Model*> sequences_;
  const Lfm2Model& model_;  // sequences_[0]: shapes, choices, weights
  std::unique_ptr<Ops> ops_;
  std::vector<Layer> layers_;
  std::map<uint32_t, std::unique_ptr<Width>> widths_;
  Lfm2Plan plan_{Lfm2Mode::batched};

  // Activations, [rows()] rows each: row r belongs to sequences_[r].
  gpu::Buffer x_, h_, bcx_, qkv_, conv_y_, attn_, gu_, act_, ids_, logits_;
  gpu::Buffer steps_;  // StepParams of the sequences the step records ({position, 1, row})
  gpu::BindGroup head_norm_;
};

}  // namespace ember::llm
