#include "tune/ceilings.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"

namespace ember::tune {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Zeros can be read faster than real data: what a ceiling reads is filled with a pattern first.
void fill_nonzero(const gpu::Device& device, const gpu::Buffer& buffer, uint64_t bytes) {
  std::vector<uint32_t> chunk(1 << 20);
  for (size_t i = 0; i < chunk.size(); i++) chunk[i] = static_cast<uint32_t>(i * 2654435761u + 1);
  for (uint64_t off = 0; off < bytes; off += chunk.size() * 4)
    device.upload(buffer, off, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(chunk.data()), std::min<uint64_t>(chunk.size() * 4, bytes - off)));
}

constexpr int kMaxChain = 1000;  // dispatches in one timed pass at most

// GPU time per dispatch of many dispatches recorded by `record` into one pass, timed at the pass
// boundaries (median of `repeats`). As many as fill ~4 ms, from 10 to 1,000: a big GPU runs 1,000
// (the pass's own cost then vanishes), the CPU adapter a few (its stages take milliseconds).
template <class Record>
double per_dispatch_gpu_us(const gpu::Device& device, int repeats, Record record) {
  auto pass_us = [&](int n) {
    gpu::Profiler p(device, 4);
    gpu::Recorder rec(device, &p, gpu::Recorder::Timing::WholeSubmit, "many");
    for (int i = 0; i < n; i++) record(rec, i);
    rec.submit();
    auto regions = p.collect();
    return (regions[0].end_ns - regions[0].begin_ns) / 1e3;
  };
  const int probe = 10;
  const int n = std::clamp(static_cast<int>(4000 / std::max(pass_us(probe) / probe, 1e-3)), probe, kMaxChain);
  std::vector<double> per;
  for (int r = 0; r <= repeats; r++) {
    const double us = pass_us(n);
    if (r > 0) per.push_back(us / n);
  }
  return median(per);
}

}  // namespace

nlohmann::json Ceilings::to_json() const {
  return {{"read_gbps", read_gbps},
          {"bytes_read", bytes_read},
          {"read_groups", read_groups},
          {"dispatch_gpu_us", dispatch_gpu_us},
          {"stage_gpu_us", stage_gpu_us},
          {"stage_groups", stage_groups},
          {"stage_bytes", stage_bytes},
          {"dispatch_cpu_us", dispatch_cpu_us},
          {"submit_wait_us", submit_wait_us},
          {"warmup_ms", warmup_ms},
          {"read_gbps_first", read_gbps_first},
          {"read_rounds", read_rounds}};
}

Ceilings measure_ceilings(const gpu::Device& device, gpu::KernelCache& kernels, const CeilingOptions& o) {
  if (!device.has_timestamps()) throw Error("measuring ceilings needs timestamp-query", device.adapter().name());
  if (o.read_groups == 0) throw Error("the read needs at least one workgroup", "ceilings", "pass a positive number of groups");
  if (o.stage_groups == 0) throw Error("a dependent stage needs at least one workgroup", "ceilings", "pass a positive number of stage groups");
  const int repeats = o.repeats;
  Ceilings c;
  const uint64_t bytes = std::min<uint64_t>(o.max_bytes, device.limits().maxStorageBufferBindingSize) & ~uint64_t(255);
  c.bytes_read = static_cast<double>(bytes);
  gpu::Buffer big = device.create_storage(bytes, "ceilings.read");
  fill_nonzero(device, big, bytes);
  const uint32_t wg = 256, groups = std::min<uint32_t>(o.read_groups, device.limits().maxComputeWorkgroupsPerDimension);
  c.read_groups = groups;
  gpu::Buffer sink = device.create_storage(uint64_t(wg) * groups * 4, "ceilings.sink");
  const gpu::Kernel& read = kernels.get({.file = "read_bandwidth.wgsl", .constants = {{"WG", wg}}});
  gpu::BindGroup read_group = kernels.bind(read, {{&big}, {&sink}});

  // A GPU that has sat idle runs at low clocks for a while: the read runs for warmup_ms of wall
  // time before anything is timed (without it, a GPU that had idled while the pack was made read
  // about half its bandwidth and three times its dispatch cost).
  const double warm_start = now_us();
  do {
    gpu::Recorder rec(device);
    rec.dispatch(read, read_group, groups, 1, 1, "read");
    rec.submit();
    device.wait_idle();
  } while (now_us() - warm_start < o.warmup_ms * 1e3);
  c.warmup_ms = (now_us() - warm_start) / 1e3;

  // The warm-up did not always suffice: the first process on a freshly started machine could still
  // read well below the next ones. So the timed reads come in rounds until a round is no faster
  // than the one before (within kSettled); the last round's median is the ceiling.
  gpu::Profiler prof(device, 64);
  auto read_round = [&] {
    std::vector<double> gbps;
    for (int r = 0; r <= repeats; r++) {
      gpu::Recorder rec(device, &prof);
      rec.dispatch(read, read_group, groups, 1, 1, "read");
      rec.submit();
      auto regions = prof.collect();
      if (r > 0) gbps.push_back(c.bytes_read / (regions[0].end_ns - regions[0].begin_ns));  // bytes/ns = GB/s
    }
    return median(gbps);
  };
  constexpr double kSettled = 1.03;
  constexpr int kMaxReadRounds = 8;
  c.read_gbps_first = c.read_gbps = read_round();
  c.read_rounds = 1;
  while (c.read_rounds < kMaxReadRounds) {
    const double next = read_round();
    c.read_rounds++;
    const bool settled = next <= c.read_gbps * kSettled;
    c.read_gbps = next;
    if (settled) break;
  }

  gpu::Buffer words = device.create_storage(64 * 4, "ceilings.words");
  const gpu::Kernel& touch = kernels.get({.file = "touch.wgsl"});
  gpu::BindGroup touch_group = kernels.bind(touch, {{&words}});
  const int n = 1000;
  std::vector<double> cpu_us, rt_us;
  for (int r = 0; r <= repeats; r++) {
    {  // CPU cost: encode N dispatches, submit, wait.
      double t0 = now_us();
      gpu::Recorder rec(device);
      for (int i = 0; i < n; i++) rec.dispatch(touch, touch_group, 1);
      rec.submit();
      device.wait_idle();
      if (r > 0) cpu_us.push_back((now_us() - t0) / n);
    }
    double t0 = now_us();  // round trip: one tiny submit + wait
    gpu::Recorder rec(device);
    rec.dispatch(touch, touch_group, 1);
    rec.submit();
    device.wait_idle();
    if (r > 0) rt_us.push_back(now_us() - t0);
  }
  // GPU time per dispatch: one pass holding N dispatches, timed at the pass boundaries. The tiny
  // dispatches are independent of each other; the stages each read what the one before wrote.
  c.dispatch_gpu_us = per_dispatch_gpu_us(device, repeats, [&](gpu::Recorder& rec, int) { rec.dispatch(touch, touch_group, 1); });
  {
    // Each stage reads the next slice of a ring over 256 MiB (more than any L2), as a decode step
    // reads each matrix once; an even ring keeps stage i's input and output at i % 2.
    c.stage_groups = std::min<uint32_t>(o.stage_groups, device.limits().maxComputeWorkgroupsPerDimension);
    const uint64_t slice = (std::min<uint64_t>(o.stage_bytes, 256ull << 20) + 255) & ~uint64_t(255);
    c.stage_bytes = static_cast<double>(slice);
    const uint32_t ring = slice ? std::max<uint32_t>(2, static_cast<uint32_t>(std::min<uint64_t>(kMaxChain, (256ull << 20) / slice)) & ~1u) : 2;
    gpu::Buffer weights = device.create_storage(std::max<uint64_t>(16, slice * ring), "ceilings.stage_weights");
    fill_nonzero(device, weights, slice * ring);
    gpu::Buffer a = device.create_storage(1024 * 4, "ceilings.stage_a"), b = device.create_storage(1024 * 4, "ceilings.stage_b");
    const gpu::Kernel& stage = kernels.get({.file = "dependent_stage.wgsl", .constants = {{"W4", double(slice / 16)}}});
    std::vector<gpu::BindGroup> stage_bindings;
    for (uint32_t i = 0; i < ring; i++) {
      const gpu::Buffer& in = i % 2 ? b : a;
      const gpu::Buffer& out = i % 2 ? a : b;
      stage_bindings.push_back(kernels.bind(stage, {{&in}, {&out}, {&weights, i * slice, std::max<uint64_t>(16, slice)}}));
    }
    c.stage_gpu_us = per_dispatch_gpu_us(device, repeats, [&](gpu::Recorder& rec, int i) {
      rec.dispatch(stage, stage_bindings[i % ring], c.stage_groups);
    });
  }
  c.dispatch_cpu_us = median(cpu_us);
  c.submit_wait_us = median(rt_us);
  device.check("measuring ceilings");
  return c;
}

}  // namespace ember::tune
