// Times a few dispatches with GPU timestamps the way decode runs them: weights cold in the cache
// (a large read between measurements evicts them), each dispatch in its own timed pass, the
// median over repeats after one warm-up. What the tuner ranks configurations by.
#pragma once

#include <functional>

#include "gpu/kernel.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"

namespace ember::tune {

class KernelTimer {
 public:
  // `flush_bytes`: size of the buffer read between measurements (0: no flush, for CPU adapters
  // whose caches a flush cannot usefully empty in test time).
  KernelTimer(const gpu::Device& device, gpu::KernelCache& kernels, uint64_t flush_bytes, int repeats = 5);

  // Median GPU microseconds of the dispatches `record` adds (summed when it adds several).
  double time_us(const std::function<void(gpu::Recorder&)>& record);

  int repeats() const { return repeats_; }
  uint64_t flush_bytes() const { return flush_bytes_; }

  // A flush size for this adapter: 256 MiB (above any L2) capped by the binding limit, 0 for CPUs.
  static uint64_t default_flush_bytes(const gpu::Device& device);

 private:
  const gpu::Device& device_;
  int repeats_;
  uint64_t flush_bytes_;
  gpu::Buffer flush_, sink_;
  const gpu::Kernel* flush_kernel_ = nullptr;
  gpu::BindGroup flush_group_;
  uint32_t flush_groups_ = 0;
  gpu::Profiler profiler_;
};

double median(std::vector<double> v);

}  // namespace ember::tune
