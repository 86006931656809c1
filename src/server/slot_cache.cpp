#include "server/slot_cache.h"

#include <algorithm>

#include "common/error.h"

namespace ember::server {

SlotCache::SlotCache(const llm::Lfm2Model& model, uint32_t interval) {
  const auto& shape = model.shape();
  for (size_t i = 0; i < static_cast<size_t>(shape.layers()); i++)
    if (shape.layer_types[i] != formats::LayerType::Attention) {
      conv_layers_.push_back(i);
      entry_bytes_ += model.conv_state(i).size;
    }
  const uint32_t positions = model.capacity();
  interval_ = std::max<uint32_t>({1, interval, (positions + kMaxSnapshots - 1) / kMaxSnapshots});
  // One entry per multiple of the interval below the capacity, and one for the end of the prompt.
  entries_ = (positions - 1) / interval_ + 1;
  snap_pos_.assign(entries_, 0);
  if (entry_bytes_ > 0) snapshots_ = model.device().create_storage(entry_bytes_ * entries_, "slot.conv_snapshots");
}

void SlotCache::clear() {
  history_.clear();
  std::fill(snap_pos_.begin(), snap_pos_.end(), 0u);
}

uint32_t SlotCache::cached(const llm::Lfm2Model& model) const {
  return static_cast<uint32_t>(std::min<size_t>(model.position(), history_.size()));
}

uint32_t SlotCache::reuse_point(const llm::Lfm2Model& model, std::span<const uint32_t> prompt) const {
  if (prompt.empty()) return 0;
  const uint32_t kept = cached(model);
  uint32_t common = 0;
  while (common < kept && common < prompt.size() && history_[common] == prompt[common]) common++;
  const uint32_t limit = std::min<uint32_t>(common, static_cast<uint32_t>(prompt.size()) - 1);
  // The live state: every kept id is a prefix of the prompt, and the state is the one after them.
  if (limit == kept && model.position() == kept) return kept;
  uint32_t best = 0;
  for (uint32_t p : snap_pos_)
    if (p <= limit) best = std::max(best, p);
  return best;
}

void SlotCache::snapshot(const llm::Lfm2Model& model, gpu::Recorder& rec, uint32_t entry, uint32_t position) {
  uint64_t at = uint64_t(entry) * entry_bytes_;
  for (size_t layer : conv_layers_) {
    const gpu::Binding b = model.conv_state(layer);
    rec.copy(*b.buffer, b.offset, snapshots_, at, b.size);
    at += b.size;
  }
  snap_pos_[entry] = position;
}

void SlotCache::restore(llm::Lfm2Model& model, uint32_t position) {
  if (position == 0) return model.reset();
  if (position != model.position()) {  // not the live state: a snapshot's
    auto it = std::find(snap_pos_.begin(), snap_pos_.end(), position);
    if (it == snap_pos_.end()) throw Error("no conv state snapshot at position " + std::to_string(position), "prompt reuse");
    uint64_t at = uint64_t(it - snap_pos_.begin()) * entry_bytes_;
    gpu::Recorder rec(model.device());
    for (size_t layer : conv_layers_) {
      const gpu::Binding b = model.conv_state(layer);
      rec.copy(snapshots_, at, *b.buffer, b.offset, b.size);
      at += b.size;
    }
    rec.submit();
  }
  model.set_position(position);
}

uint32_t SlotCache::start(llm::Lfm2Model& model, std::span<const uint32_t> prompt) {
  const uint32_t reused = reuse_point(model, prompt);
  restore(model, reused);
  history_.resize(reused);
  for (uint32_t& p : snap_pos_)
    if (p > reused) p = 0;  // the history beyond the reuse point is replaced
  history_.insert(history_.end(), prompt.begin() + reused, prompt.end());
  // Prefill up to each multiple of the interval, snapshot there; then the prompt's end.
  const uint32_t end = static_cast<uint32_t>(prompt.size());
  uint32_t at = reused;
  while (at < end) {
    const uint32_t next = std::min(end, (at / interval_ + 1) * interval_);
    model.prefill(prompt.subspan(at, next - at));
    at = next;
    if (entry_bytes_ == 0) continue;
    gpu::Recorder rec(model.device());
    if (at % interval_ == 0) snapshot(model, rec, at / interval_ - 1, at);
    else snapshot(model, rec, entries_ - 1, at);
    rec.submit();
  }
  return reused;
}

namespace {
// WebGPU copies no buffer onto itself: such a copy goes through `staging` (in order within the recorder).
void copy(gpu::Recorder& rec, const gpu::Binding& from, const gpu::Binding& to, uint64_t bytes, const gpu::Buffer& staging) {
  if (from.buffer != to.buffer) return rec.copy(*from.buffer, from.offset, *to.buffer, to.offset, bytes);
  const uint64_t piece = staging.size();
  for (uint64_t at = 0; at < bytes; at += piece) {
    const uint64_t n = std::min(piece, bytes - at);
    rec.copy(*from.buffer, from.offset + at, staging, 0, n);
    rec.copy(staging, 0, *to.buffer, to.offset + at, n);
  }
}
}  // namespace

void SlotCache::copy_from(const SlotCache& src_cache, const llm::Lfm2Model& src, llm::Lfm2Model& model, gpu::Recorder& rec,
                          const gpu::Buffer& staging) {
  const uint32_t P = src.position();
  const auto& shape = src.shape();
  const uint64_t kv_bytes = uint64_t(P) * shape.kv_heads * (shape.head_dim + src.caches().padding()) * 4;
  for (size_t i = 0; i < static_cast<size_t>(shape.layers()); i++) {
    if (shape.layer_types[i] == formats::LayerType::Attention) {
      copy(rec, src.k_cache(i), model.k_cache(i), kv_bytes, staging);
      copy(rec, src.v_cache(i), model.v_cache(i), kv_bytes, staging);
    } else {
      copy(rec, src.conv_state(i), model.conv_state(i), src.conv_state(i).size, staging);
    }
  }
  rec.copy(src.tokens(), 0, model.tokens(), 0, uint64_t(P) * 4);
  rec.copy(src.logits(), 0, model.logits(), 0, uint64_t(src.vocab()) * 4);
  if (entry_bytes_ > 0) rec.copy(src_cache.snapshots_, 0, snapshots_, 0, entry_bytes_ * entries_);
  snap_pos_ = src_cache.snap_pos_;
  history_ = src_cache.history_;
  model.set_position(P);
}

}  // namespace ember::server
