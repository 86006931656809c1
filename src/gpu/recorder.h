// Records many dispatches into one command buffer and submits it. With a Profiler attached, each
// dispatch runs in its own timed pass so the profile names every kernel.
#pragma once

#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu/device.h"
#include "gpu/kernel.h"

namespace ember::gpu {

class Profiler;

class Recorder {
 public:
  // With a profiler: PerDispatch times each dispatch in its own pass (a per-kernel breakdown);
  // WholeSubmit keeps all dispatches in one pass timed as one region (end-to-end GPU time
  // without the cost of pass boundaries).
  enum class Timing { PerDispatch, WholeSubmit };
  explicit Recorder(const Device& device, Profiler* profiler = nullptr, Timing timing = Timing::PerDispatch,
                    std::string whole_region = "submit");
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;
  ~Recorder();

  // `region`: name in the profile; defaults to the kernel's label.
  void dispatch(const Kernel& kernel, const BindGroup& group, uint32_t x, uint32_t y = 1, uint32_t z = 1,
                const std::string& region = "");
  void dispatch_indirect(const Kernel& kernel, const BindGroup& group, const Buffer& args, uint64_t offset,
                         const std::string& region = "");
  void copy(const Buffer& src, uint64_t src_offset, const Buffer& dst, uint64_t dst_offset, uint64_t size);
  // `value` lands in `dst` at this point of the command stream: a queue write into its own slot of
  // `staging` (queue writes all land before the submit's commands), then a copy recorded here. What
  // several steps of one submit read from the same `dst` each get their own staging slot.
  template <typename T>
  void write(const Buffer& staging, uint64_t slot_offset, const T& value, const Buffer& dst) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 4 == 0);
    device_.upload(staging, std::span<const T>(&value, 1), slot_offset);
    copy(staging, slot_offset, dst, 0, sizeof value);
  }
  void clear(const Buffer& buffer, uint64_t offset = 0, uint64_t size = WGPU_WHOLE_SIZE);

  // Dispatches whose region (the kernel's label unless named) is `region` are not recorded from
  // now on: a profile times a chain without one kernel to learn what that kernel adds to it. The
  // results are then wrong; only the timing means anything.
  void leave_out(std::string region) { left_out_ = std::move(region); }

  // A kernel just recorded sets `word` if it gives up (status_word.h): whatever reads this
  // submit's results must read the word too. submit() hands the words to the device, whose next
  // check reads them; ReadbackRing::submit takes them first and copies them with its results.
  void watch(const StatusWord& word);
  std::vector<StatusWord> take_watched() { return std::exchange(watched_, {}); }

  // Ends recording and submits; the recorder may be used again afterwards.
  void submit();
  size_t dispatches() const { return dispatches_; }  // asked for, left-out ones included

 private:
  void begin_pass(const std::string& region);
  void end_pass();
  // Counts a dispatch and, unless its region is left out, sets up its pass, pipeline and bind
  // group (then true: the caller records the dispatch itself).
  bool begin_dispatch(const Kernel& kernel, const BindGroup& group, const std::string& region);
  void ensure_encoder();

  const Device& device_;
  Profiler* profiler_;
  Timing timing_;
  std::string whole_region_;
  WGPUCommandEncoder encoder_ = nullptr;
  WGPUComputePassEncoder pass_ = nullptr;
  size_t dispatches_ = 0;
  std::string left_out_;
  std::vector<StatusWord> watched_;
};

}  // namespace ember::gpu
