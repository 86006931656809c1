// Times a few dispatches with GPU timestamps the way decode runs them: weights cold in the cache
// (a large read between measurements evicts them), each dispatch in its own timed pass, the
// median over repeats after one warm-up. What the tuner ranks configurations by.
//
// GPUs lower their clocks while idle, and the tuner leaves the GPU idle between measurements
// (pipeline compiles, reference checks): the first measurements after such a pause read several
// times too slow. So the flushes double as a clock probe: a measurement counts only when its
// flushes ran within kWarmSlack of the fastest flush seen; otherwise the GPU is kept busy and the
// measurement repeated.
#pragma once

#include <functional>

#include "gpu/kernel.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"

namespace ember::tune {

class KernelTimer {
 public:
  // `flush_bytes`: size of the buffer read between measurements (0: no flush, for CPU adapters
  // whose caches a flush cannot usefully empty in test time; then no clock probe either).
  KernelTimer(const gpu::Device& device, gpu::KernelCache& kernels, uint64_t flush_bytes, int repeats = 5);

  // How several dispatches of one run count: each one's own time, summed; or the span from the
  // first one's start to the last one's end, the gaps between them included (as a dependent
  // chain runs in decode).
  enum class Measure { sum, span };
  // Median GPU microseconds of the dispatches `record` adds.
  double time_us(const std::function<void(gpu::Recorder&)>& record, Measure measure = Measure::sum);

  int repeats() const { return repeats_; }
  uint64_t flush_bytes() const { return flush_bytes_; }
  // Measurements repeated because the GPU had slowed down, and those still slow after the last
  // attempt (kept, but suspect).
  int cold_retries() const { return cold_retries_; }
  int cold_kept() const { return cold_kept_; }
  double warm_flush_us() const { return best_flush_us_; }

  // A flush size for this adapter: 256 MiB (above any L2) capped by the binding limit, 0 for CPUs.
  static uint64_t default_flush_bytes(const gpu::Device& device);

  static constexpr double kWarmSlack = 1.10;

 private:
  // Median GPU microseconds of one flush over `n` flushes in one submit (keeps the GPU busy).
  double heat(int n);
  bool warm(double flush_us);

  const gpu::Device& device_;
  int repeats_;
  uint64_t flush_bytes_;
  gpu::Buffer flush_, sink_;
  const gpu::Kernel* flush_kernel_ = nullptr;
  gpu::BindGroup flush_group_;
  uint32_t flush_groups_ = 0;
  gpu::Profiler profiler_;
  double best_flush_us_ = 0;
  int cold_retries_ = 0, cold_kept_ = 0;
};

double median(std::vector<double> v);

}  // namespace ember::tune
