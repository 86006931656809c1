#include "tune/kernel_timer.h"

#include <algorithm>

#include "common/error.h"

namespace ember::tune {
namespace {
const char* kFlushRegion = "tune.flush";
constexpr int kHeatFlushes = 64;   // a few ms of reads at full clocks on a big GPU
constexpr int kMaxAttempts = 6;
}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

uint64_t KernelTimer::default_flush_bytes(const gpu::Device& device) {
  if (device.adapter().type == "CPU") return 0;
  return std::min<uint64_t>(256ull << 20, device.limits().maxStorageBufferBindingSize) & ~uint64_t(255);
}

KernelTimer::KernelTimer(const gpu::Device& device, gpu::KernelCache& kernels, uint64_t flush_bytes, int repeats)
    : device_(device), repeats_(std::max(1, repeats)), flush_bytes_(flush_bytes & ~uint64_t(15)),
      profiler_(device, 2048) {
  if (flush_bytes_ == 0) return;
  flush_ = device.create_storage(flush_bytes_, "tune.flush");
  const uint32_t wg = 256;
  flush_groups_ = std::min<uint32_t>(4096, device.limits().maxComputeWorkgroupsPerDimension);
  sink_ = device.create_storage(uint64_t(wg) * flush_groups_ * 4, "tune.flush.sink");
  flush_kernel_ = &kernels.get({.file = "read_bandwidth.wgsl", .constants = {{"WG", wg}}});
  flush_group_ = kernels.bind(*flush_kernel_, {{&flush_}, {&sink_}});
  // Bring the clocks up and learn what a flush takes when they are: heat until a round no
  // longer beats the best by more than 2% (at most 50 rounds, ~0.2 s at full clocks).
  for (int round = 0, steady = 0; round < 50 && steady < 3; round++) {
    const double us = heat(kHeatFlushes);
    steady = (best_flush_us_ > 0 && us > best_flush_us_ / 1.02) ? steady + 1 : 0;
    if (best_flush_us_ == 0 || us < best_flush_us_) best_flush_us_ = us;
  }
}

double KernelTimer::heat(int n) {
  gpu::Recorder rec(device_, &profiler_, gpu::Recorder::Timing::PerDispatch);
  for (int i = 0; i < n; i++) rec.dispatch(*flush_kernel_, flush_group_, flush_groups_, 1, 1, kFlushRegion);
  rec.submit();
  auto regions = profiler_.collect();
  profiler_.clear_summary();
  std::vector<double> us;
  for (const auto& r : regions) us.push_back((r.end_ns - r.begin_ns) / 1e3);
  return median(us);
}

bool KernelTimer::warm(double flush_us) {
  if (flush_us < best_flush_us_) best_flush_us_ = flush_us;
  return flush_us <= kWarmSlack * best_flush_us_;
}

double KernelTimer::time_us(const std::function<void(gpu::Recorder&)>& record, Measure measure) {
  for (int attempt = 1;; attempt++) {
    // One submit: ([flush], measured dispatches) x (1 warm-up + repeats). In PerDispatch timing
    // every dispatch is one region, in order, so the runs are cut by dispatch counts.
    gpu::Recorder rec(device_, &profiler_, gpu::Recorder::Timing::PerDispatch);
    std::vector<size_t> per_run;
    for (int r = 0; r <= repeats_; r++) {
      if (flush_kernel_) rec.dispatch(*flush_kernel_, flush_group_, flush_groups_, 1, 1, kFlushRegion);
      const size_t before = rec.dispatches();
      record(rec);
      per_run.push_back(rec.dispatches() - before);
    }
    rec.submit();
    auto regions = profiler_.collect();
    profiler_.clear_summary();
    std::vector<double> us, flush_us;
    size_t i = 0;
    for (int r = 0; r <= repeats_; r++) {
      if (flush_kernel_ && i < regions.size()) {
        flush_us.push_back((regions[i].end_ns - regions[i].begin_ns) / 1e3);
        i++;
      }
      double sum = 0;
      const size_t first = i;
      for (size_t k = 0; k < per_run[r] && i < regions.size(); k++, i++) sum += (regions[i].end_ns - regions[i].begin_ns) / 1e3;
      if (measure == Measure::span && i > first) sum = (regions[i - 1].end_ns - regions[first].begin_ns) / 1e3;
      if (r > 0) us.push_back(sum);
    }
    if (!flush_kernel_ || warm(median(flush_us))) return median(us);
    if (attempt == kMaxAttempts) {
      cold_kept_++;
      return median(us);
    }
    cold_retries_++;
    warm(heat(kHeatFlushes));
  }
}

}  // namespace ember::tune
