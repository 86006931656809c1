#include "tune/compute_peaks.h"

#include <algorithm>
#include <vector>

#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "kernels/dispatch.h"

namespace ember::tune {
namespace {

constexpr uint32_t kIters = 256;  // rounds of 8 chains per thread

// Tera-operations per second of the probe: `ops_per_chain_step` per chain and round.
double probe(const gpu::Device& device, gpu::KernelCache& kernels, bool dot4, int repeats) {
  gpu::KernelKey key{.file = "compute_peak.wgsl", .constants = {{"ITERS", kIters}}};
  if (dot4) key.defines.insert("DOT4");
  const gpu::Kernel& k = kernels.get(key);
  gpu::Buffer sink = device.create_storage(256, "compute peak sink");
  kernels::Dispatch d;
  d.kernel = &k;
  d.group = kernels.bind(k, {{&sink}});
  auto run_ms = [&](uint64_t groups) {
    kernels::grid_1d(d, groups);
    gpu::Profiler p(device, 4);
    gpu::Recorder rec(device, &p);
    d.record(rec);
    rec.submit();
    auto r = p.collect();
    return std::max(r.at(0).ms(), 1e-6);
  };
  // Size the grid so one dispatch runs ~4 ms (a large GPU needs many waves to reach its peak; a
  // CPU adapter only a few groups).
  uint64_t groups = 16;
  run_ms(groups);  // compiles, warms up
  for (int i = 0; i < 12; i++) {
    const double ms = run_ms(groups);
    if (ms >= 2.0 || groups >= (uint64_t(1) << 20)) break;
    groups = std::min<uint64_t>(uint64_t(1) << 20, uint64_t(double(groups) * std::clamp(4.0 / ms, 1.5, 64.0)));
  }
  std::vector<double> t;
  for (int r = 0; r < repeats; r++) t.push_back(run_ms(groups));
  std::sort(t.begin(), t.end());
  // Both: 8 chains a round, 8 operations per step (a vec4 FMA, or a dot of 4 products plus the sums).
  const double ops = double(d.x) * d.y * 256.0 * kIters * 8 * 8;
  return ops / (t[t.size() / 2] * 1e-3) / 1e12;
}

}  // namespace

ComputePeaks measure_compute_peaks(const gpu::Device& device, gpu::KernelCache& kernels, int repeats) {
  ComputePeaks p;
  p.fma_tflops = probe(device, kernels, false, repeats);
  if (device.adapter().dot4_i8_packed) p.dot4_tops = probe(device, kernels, true, repeats);
  return p;
}

}  // namespace ember::tune
