// A WebGPU device on one adapter, with ember's error discipline: every Dawn error (uncaptured,
// validation inside a scope, device loss) becomes an ember::Error carrying Dawn's message and our
// context, and nothing continues after a device error.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/adapter.h"
#include "gpu/status_word.h"

namespace ember::gpu {

struct DeviceOptions {
  std::string adapter;     // selector, see Instance::select
  // Dawn's shader robustness (every buffer index clamped) is off unless asked for: ember runs only
  // its own kernels, which stay in bounds by construction (tails masked, ids checked), on buffers
  // whose sizes were checked against the shapes at load. The checks cost a large share of the
  // matmuls' time and of the time to first token on the GPUs measured (bench/PERFORMANCE.md).
  bool bounds_checks = false;
  bool fast = false;  // also skip Dawn's API validation: cheaper encoding, but a misuse is no longer a clear error
  bool profiling = false;  // exact timestamps: timestamp_quantization off
  // Optional features not to request even where the adapter has them ("shader-f16", "subgroups",
  // "timestamp-query"): to test fallback paths, or to rule a feature out.
  std::set<std::string> without;
};

using BufferHandle = Handle<WGPUBuffer, wgpuBufferRelease>;
using QueueHandle = Handle<WGPUQueue, wgpuQueueRelease>;
using DeviceHandle = Handle<WGPUDevice, wgpuDeviceRelease>;

class Device;

// A GPU buffer. Storage buffers are also copy source/destination so they can be uploaded and read.
class Buffer {
 public:
  Buffer() = default;
  WGPUBuffer get() const { return handle_.get(); }
  uint64_t size() const { return size_; }
  const std::string& label() const { return label_; }
  explicit operator bool() const { return static_cast<bool>(handle_); }

 private:
  friend class Device;
  BufferHandle handle_;
  uint64_t size_ = 0;
  std::string label_;
};

class Device {
 public:
  // Picks the adapter (options.adapter), requests every optional feature it has that ember uses
  // (shader-f16, subgroups, timestamp-query) and the adapter's own limits.
  static Device open(const DeviceOptions& options = {});

  Device(Device&&) noexcept;
  Device& operator=(Device&&) noexcept;
  ~Device();

  WGPUDevice get() const;
  WGPUQueue queue() const;
  const Instance& instance() const;
  const AdapterDescription& adapter() const;
  const WGPULimits& limits() const;
  bool has_f16() const;
  bool has_subgroups() const;
  bool has_timestamps() const;
  // Timestamps at full resolution (DeviceOptions::profiling); otherwise Dawn rounds them to
  // 65,536 ns. What gpu::Profiler requires.
  bool exact_timestamps() const;
  uint32_t subgroup_size() const;  // the adapter's minimum; kernels are written for any size in range

  // Throws if Dawn reported an error since the last check (or the device is lost), or if a status
  // word owed by an earlier submit (owe_status) is set. `context` names what was being done
  // ("matvec_q4 dispatch", "uploading L3.attn.qkv").
  void check(const std::string& context) const;

  // Status words (status_word.h) of submitted work that no ReadbackRing read with its results:
  // Recorder::submit hands them over. The next check() (so also wait_idle(), wait_for() and every
  // download) reads them back, once, and throws the error of the first one set.
  void owe_status(std::span<const StatusWord> words) const;

  // Runs `fn` inside validation + out-of-memory + internal error scopes and throws the first error
  // with `context`. Use around object creation so the failing call is the one named.
  void scoped(const std::string& context, const std::function<void()>& fn) const;

  Buffer create_buffer(uint64_t size, WGPUBufferUsage usage, const std::string& label) const;
  Buffer create_storage(uint64_t size, const std::string& label) const;  // storage | copy src/dst
  // A uniform buffer holding `params` (a trivially copyable struct mirroring a WGSL struct).
  template <typename T>
  Buffer create_uniform(const T& params, const std::string& label) const {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 4 == 0);
    Buffer b = create_buffer(sizeof(T) < 16 ? 16 : sizeof(T), WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, label);
    upload(b, 0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&params), sizeof(T)));
    return b;
  }
  void upload(const Buffer& dst, uint64_t offset, std::span<const uint8_t> bytes) const;
  template <typename T>
  void upload(const Buffer& dst, std::span<const T> data, uint64_t offset = 0) const {
    upload(dst, offset, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size_bytes()));
  }
  // Copies into a staging buffer, maps it and returns the bytes (waits for the GPU).
  std::vector<uint8_t> download(const Buffer& src, uint64_t offset, uint64_t size) const;
  template <typename T>
  std::vector<T> download_as(const Buffer& src, uint64_t offset = 0, uint64_t count = UINT64_MAX) const {
    if (count == UINT64_MAX) count = (src.size() - offset) / sizeof(T);
    auto bytes = download(src, offset, count * sizeof(T));
    std::vector<T> out(count);
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

  void submit(WGPUCommandBuffer commands) const;
  // Blocks until all submitted work is done, then checks for errors.
  void wait_idle(const std::string& context = "waiting for the GPU") const;
  // Marks the work submitted so far; wait_for(mark) blocks until that work is done (not any
  // submitted after the mark), so the CPU can queue the next submit while the GPU runs this one.
  uint64_t mark() const;
  void wait_for(uint64_t mark, const std::string& context = "waiting for the GPU") const;

  // Maps a MapRead buffer and calls `read` with its bytes (waits).
  void map_read(WGPUBuffer buffer, uint64_t size, const std::function<void(const uint8_t*)>& read) const;

 private:
  struct State;
  explicit Device(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace ember::gpu
