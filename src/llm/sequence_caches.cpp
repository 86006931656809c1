#include "llm/sequence_caches.h"

#include <algorithm>

#include "common/error.h"

namespace ember::llm {
namespace {
uint64_t round_up(uint64_t n, uint64_t align) { return align > 1 ? (n + align - 1) / align * align : n; }
}  // namespace

SequenceCaches::SequenceCaches(const gpu::Device& device, const formats::LlmShape& s, uint32_t capacity, uint32_t padding, uint32_t slots)
    : slots_(slots), capacity_(capacity), padding_(padding) {
  if (slots == 0 || capacity == 0) throw Error("sequence caches need at least one slot and one position", "SequenceCaches");
  const uint64_t align = device.limits().minStorageBufferOffsetAlignment;
  kv_slot_bytes_ = round_up(uint64_t(capacity) * s.kv_heads * (s.head_dim + padding) * 4, align);
  conv_slot_bytes_ = round_up(uint64_t(s.hidden) * 2 * 4, align);
  const size_t L = s.layers();
  k_.resize(L);
  v_.resize(L);
  conv_.resize(L);
  for (size_t i = 0; i < L; i++) {
    const std::string p = formats::layer_prefix(static_cast<int>(i));
    if (s.layer_types[i] == formats::LayerType::Attention) {
      k_[i] = device.create_storage(kv_slot_bytes_ * slots, p + "k_cache");
      v_[i] = device.create_storage(kv_slot_bytes_ * slots, p + "v_cache");
    } else {
      conv_[i] = device.create_storage(conv_slot_bytes_ * slots, p + "conv_state");
    }
  }
}

gpu::Binding SequenceCaches::slice(const std::vector<gpu::Buffer>& buffers, size_t layer, uint32_t slot, uint64_t bytes) {
  const gpu::Buffer& b = buffers.at(layer);
  if (!b) return {&b};
  return {&b, uint64_t(slot) * bytes, bytes};
}

std::string SequenceCaches::whole_binding_problem(const gpu::Device& device) const {
  const uint64_t most = std::max(kv_slot_bytes_, conv_slot_bytes_) * slots_;
  const uint64_t limit = device.limits().maxStorageBufferBindingSize;
  if (most > limit)
    return "the caches of " + std::to_string(slots_) + " sequences (" + std::to_string(most) + " bytes per layer) exceed the device's " +
           std::to_string(limit) + "-byte storage binding limit";
  return {};
}

}  // namespace ember::llm
