// The KV caches and conv states of one or more sequences of an LFM2 model. Each layer has one
// buffer per kind holding every sequence's slot at a fixed stride, so a sequence (Lfm2Model)
// binds its own slot while the batched decoder binds the whole buffer and finds sequence s at
// s x stride (StepParams.seq): one dispatch then steps every sequence of the batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/llm_pack.h"
#include "gpu/device.h"
#include "gpu/kernel.h"

namespace ember::llm {

class SequenceCaches {
 public:
  // Caches for `slots` sequences of `capacity` positions; KV rows of head_dim + padding floats.
  SequenceCaches(const gpu::Device& device, const formats::LlmShape& shape, uint32_t capacity, uint32_t padding, uint32_t slots);

  uint32_t slots() const { return slots_; }
  uint32_t capacity() const { return capacity_; }
  uint32_t padding() const { return padding_; }

  // Slot `slot` of layer `layer` (an empty binding where the layer has no such cache).
  gpu::Binding k(size_t layer, uint32_t slot) const { return slice(k_, layer, slot, kv_slot_bytes_); }
  gpu::Binding v(size_t layer, uint32_t slot) const { return slice(v_, layer, slot, kv_slot_bytes_); }
  gpu::Binding conv_state(size_t layer, uint32_t slot) const { return slice(conv_, layer, slot, conv_slot_bytes_); }
  // Every slot of a layer's cache, for kernels that step several sequences.
  gpu::Binding k_all(size_t layer) const { return {&k_.at(layer)}; }
  gpu::Binding v_all(size_t layer) const { return {&v_.at(layer)}; }
  gpu::Binding conv_state_all(size_t layer) const { return {&conv_.at(layer)}; }
  // Floats between two slots (each slot starts at a storage-offset-aligned byte offset).
  uint32_t kv_slot_stride() const { return static_cast<uint32_t>(kv_slot_bytes_ / 4); }
  uint32_t conv_slot_stride() const { return static_cast<uint32_t>(conv_slot_bytes_ / 4); }

  // Empty when one binding of a whole layer's cache fits the device's limits (so a kernel can
  // step every slot at once), else why not.
  std::string whole_binding_problem(const gpu::Device& device) const;

 private:
  static gpu::Binding slice(const std::vector<gpu::Buffer>& buffers, size_t layer, uint32_t slot, uint64_t bytes);

  uint32_t slots_, capacity_, padding_;
  uint64_t kv_slot_bytes_ = 0, conv_slot_bytes_ = 0;
  std::vector<gpu::Buffer> k_, v_, conv_;  // per layer (empty buffers where the layer has none)
};

}  // namespace ember::llm
