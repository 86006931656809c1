// Results read back from the GPU with the status words of the kernels that made them, in one copy
// and one map per submit: a ring of mapped-read buffers, each a slot for one submit in flight. A
// slot holds the caller's payload (ids, logits: what it copies into [0, payload_bytes())), then the
// status words the submit's Recorder watched (status_word.h). read() hands the payload out only
// after checking those words, so a caller cannot take a result and forget its status.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/recorder.h"

namespace ember::gpu {

class ReadbackRing {
 public:
  static constexpr uint32_t kMaxStatusWords = 8;  // per submit

  ReadbackRing(const Device& device, uint64_t payload_bytes, uint32_t slots, const std::string& label);
  ~ReadbackRing();
  ReadbackRing(const ReadbackRing&) = delete;
  ReadbackRing& operator=(const ReadbackRing&) = delete;

  uint32_t slots() const { return static_cast<uint32_t>(slots_.size()); }
  uint64_t payload_bytes() const { return payload_bytes_; }
  // Where a submit copies its payload: [0, payload_bytes()) of this buffer.
  const Buffer& buffer(uint32_t slot) const { return slots_.at(slot).buffer; }

  // Records copies of the status words `rec` watched into `slot` (after the payload), submits
  // `rec` and starts mapping the slot. The slot must not be in use (submitted and not released).
  void submit(Recorder& rec, uint32_t slot);
  // Whether the slot's map has completed (polls the device's events).
  bool ready(uint32_t slot) const;
  // Waits for the slot's map, checks the device, then the slot's status words: the first one set
  // throws its error (`where` names the caller). Returns the payload, valid until release().
  std::span<const uint8_t> read(uint32_t slot, const std::string& where);
  // Unmaps the slot so that it can take another submit (waits for its map first).
  void release(uint32_t slot);
  // Releases every slot: what a caller whose last use ended in an error does before it goes on.
  void release_all();

 private:
  struct Slot {
    Buffer buffer;
    std::vector<StatusWord> words;  // copied after the payload, in order
    std::unique_ptr<bool> mapped = std::make_unique<bool>(false);
    bool in_use = false;
  };
  const Device& device_;
  uint64_t payload_bytes_;
  std::vector<Slot> slots_;
};

}  // namespace ember::gpu
