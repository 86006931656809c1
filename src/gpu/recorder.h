// Records many dispatches into one command buffer and submits it. With a Profiler attached, each
// dispatch runs in its own timed pass so the profile names every kernel.
#pragma once

#include <string>

#include "gpu/kernel.h"

namespace ember::gpu {

class Profiler;

class Recorder {
 public:
  explicit Recorder(const Device& device, Profiler* profiler = nullptr);
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  ~Recorder();

  // `region`: name in the profile; defaults to the kernel's label.
  void dispatch(const Kernel& kernel, const BindGroup& group, uint32_t x, uint32_t y = 1, uint32_t z = 1,
                const std::string& region = "");
  void dispatch_indirect(const Kernel& kernel, const BindGroup& group, const Buffer& args, uint64_t offset,
                         const std::string& region = "");
  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t size);
  void clear(const Buffer& buffer, uint64_t offset = 0, uint64_t size = WGPU_WHOLE_SIZE);

  // Ends recording and submits; the recorder may be used again afterwards.
  void submit();
  size_t dispatches() const { return dispatches_; }

 private:
  void begin_pass(const std::string& region);
  void end_pass();
  void ensure_encoder();

  const Device& device_;
  Profiler* profiler_;
  WGPUCommandEncoder encoder_ = nullptr;
  WGPUComputePassEncoder pass_ = nullptr;
  size_t dispatches_ = 0;
};

}  // namespace ember::gpu
