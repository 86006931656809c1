// What a server slot keeps of its past requests, so a request whose prompt starts with it
// prefills only the rest (prompt reuse, multi-turn chat): the ids whose KV the slot's caches hold
// (its history: the last prompt and the ids generated after it) and snapshots of its conv states.
//
// Attention KV is per position: keeping a prefix is setting the position back. LFM2's short-conv
// layers instead carry a rolling state (the last two inputs of each conv layer), and that state
// after position p cannot be recomputed from the kept KV: the conv inputs of the last positions
// depend, through every layer below, on the conv states before them, back to the start. So the
// slot copies the conv states aside (on the GPU, a few KB per conv layer) at the points a later
// prompt is likely to diverge from: the end of each prompt (the reply after it is often
// re-rendered differently: another tokenization, a template that drops text) and every
// `interval` positions of a prefill (a prompt edited in the middle). The live state after the
// last decoded id serves a prompt that extends the whole history (the next turn of a chat).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gpu/device.h"
#include "gpu/recorder.h"
#include "llm/lfm2_model.h"

namespace ember::server {

class SlotCache {
 public:
  // `interval`: positions between two prefill snapshots (raised so a slot keeps at most
  // kMaxSnapshots of them).
  SlotCache(const llm::Lfm2Model& model, uint32_t interval);
  static constexpr uint32_t kMaxSnapshots = 64;

  // Positions of `prompt` whose caches this slot can restore: the longest prefix the history
  // shares with it that ends at the live state or at a snapshot, below prompt.size() (the last
  // prompt id is always prefilled: its logits give the first sample).
  uint32_t reuse_point(const llm::Lfm2Model& model, std::span<const uint32_t> prompt) const;

  // Puts `model` (this slot's) at reuse_point(prompt), restoring the conv states from a snapshot
  // where needed, then prefills the rest of the prompt, taking snapshots as it goes. Returns the
  // positions reused. Submits its GPU work; does not wait for it.
  uint32_t start(llm::Lfm2Model& model, std::span<const uint32_t> prompt);

  // Makes `model` (this slot's) a copy of `src` (another slot's model, after its start() of a
  // prompt): KV of the prompt, conv states, token ids, last logits, snapshots. Records into `rec`;
  // a copy within one buffer (slots of shared caches) goes through `staging`, a piece at a time.
  void copy_from(const SlotCache& src_cache, const llm::Lfm2Model& src, llm::Lfm2Model& model, gpu::Recorder& rec,
                 const gpu::Buffer& staging);

  void accept(uint32_t id) { history_.push_back(id); }  // a generated id (decoded next, or the last)
  void clear();                                           // nothing kept (after a GPU failure)
  // Ids whose KV the caches hold (at most `model.position()` of the history).
  uint32_t cached(const llm::Lfm2Model& model) const;
  const std::vector<uint32_t>& history() const { return history_; }
  uint64_t snapshot_bytes() const { return entry_bytes_ * entries_; }

 private:
  void snapshot(const llm::Lfm2Model& model, gpu::Recorder& rec, uint32_t entry, uint32_t position);
  void restore(llm::Lfm2Model& model, uint32_t position);

  uint32_t interval_ = 0, entries_ = 0;
  uint64_t entry_bytes_ = 0;
  std::vector<size_t> conv_layers_;
  gpu::Buffer snapshots_;           // entries_ x entry_bytes_: every conv layer's state, in layer order
  std::vector<uint32_t> snap_pos_;  // per entry: the position it holds the state after (0 = empty)
  std::vector<uint32_t> history_;
};

}  // namespace ember::server
