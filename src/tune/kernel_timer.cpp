#include "tune/kernel_timer.h"

#include <algorithm>

#include "common/error.h"

namespace ember::tune {
namespace {
const char* kFlushRegion = "tune.flush";
}

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
}

double KernelTimer::time_us(const std::function<void(gpu::Recorder&)>& record) {
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
  std::vector<double> us;
  size_t i = 0;
  for (int r = 0; r <= repeats_; r++) {
    if (flush_kernel_) i++;
    double sum = 0;
    for (size_t k = 0; k < per_run[r] && i < regions.size(); k++, i++) sum += (regions[i].end_ns - regions[i].begin_ns) / 1e3;
    if (r > 0) us.push_back(sum);
  }
  return median(us);
}

}  // namespace ember::tune
