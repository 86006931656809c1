#include "gpu/readback_ring.h"

#include <cstring>

#include "common/error.h"

namespace ember::gpu {

ReadbackRing::ReadbackRing(const Device& device, uint64_t payload_bytes, uint32_t slots, const std::string& label)
    : device_(device), payload_bytes_((payload_bytes + 3) / 4 * 4) {
  if (slots == 0) throw Error("a read-back ring of no slots", label);
  slots_.resize(slots);
  for (Slot& s : slots_)
    s.buffer = device.create_buffer(payload_bytes_ + kMaxStatusWords * 4, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, label);
}

ReadbackRing::~ReadbackRing() {
  // A slot still mapping is waited for: its callback writes into the slot.
  for (Slot& s : slots_) {
    if (!s.in_use) continue;
    device_.instance().wait_until([&] { return *s.mapped; });
    wgpuBufferUnmap(s.buffer.get());
  }
}

void ReadbackRing::submit(Recorder& rec, uint32_t slot) {
  Slot& s = slots_.at(slot);
  if (s.in_use) throw Error("read-back slot " + std::to_string(slot) + " is still in use", s.buffer.label(), "release() it before submitting into it");
  s.words = rec.take_watched();
  if (s.words.size() > kMaxStatusWords)
    throw Error(std::to_string(s.words.size()) + " status words in one submit, above " + std::to_string(kMaxStatusWords), s.buffer.label());
  for (size_t i = 0; i < s.words.size(); i++) rec.copy(*s.words[i].buffer, s.words[i].offset, s.buffer, payload_bytes_ + 4 * i, 4);
  rec.submit();
  s.in_use = true;
  *s.mapped = false;
  WGPUBufferMapCallbackInfo cb{};
  cb.mode = WGPUCallbackMode_AllowProcessEvents;
  cb.callback = [](WGPUMapAsyncStatus, WGPUStringView, void* u, void*) { *static_cast<bool*>(u) = true; };
  cb.userdata1 = s.mapped.get();
  wgpuBufferMapAsync(s.buffer.get(), WGPUMapMode_Read, 0, payload_bytes_ + kMaxStatusWords * 4, cb);
}

bool ReadbackRing::ready(uint32_t slot) const {
  device_.instance().process_events();
  return *slots_.at(slot).mapped;
}

std::span<const uint8_t> ReadbackRing::read(uint32_t slot, const std::string& where) {
  Slot& s = slots_.at(slot);
  if (!s.in_use) throw Error("read-back slot " + std::to_string(slot) + " holds no submit", s.buffer.label());
  device_.instance().wait_until([&] { return *s.mapped; });
  device_.check(where);
  const uint64_t bytes = payload_bytes_ + kMaxStatusWords * 4;
  const auto* p = static_cast<const uint8_t*>(wgpuBufferGetConstMappedRange(s.buffer.get(), 0, bytes));
  if (!p) throw Error("mapping a read-back slot failed", s.buffer.label());
  for (size_t i = 0; i < s.words.size(); i++) {
    uint32_t word;
    std::memcpy(&word, p + payload_bytes_ + 4 * i, 4);
    if (word != 0) {
      const Error error = s.words[i].error(where);
      release(slot);  // a caller that goes on after the error finds the slot free
      throw error;
    }
  }
  return {p, payload_bytes_};
}

void ReadbackRing::release(uint32_t slot) {
  Slot& s = slots_.at(slot);
  if (!s.in_use) return;
  device_.instance().wait_until([&] { return *s.mapped; });
  wgpuBufferUnmap(s.buffer.get());
  s.in_use = false;
  s.words.clear();
}

void ReadbackRing::release_all() {
  for (uint32_t i = 0; i < slots(); i++) release(i);
}

}  // namespace ember::gpu
