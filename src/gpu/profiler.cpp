#include "gpu/profiler.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"

namespace ember::gpu {
namespace {
const char* const kPaddingRegion = "\x1f(unused query slots)";
}  // namespace

Profiler::Profiler(const Device& device, uint32_t capacity) : device_(device), capacity_(capacity) {
  if (!device.has_timestamps())
    throw Error("this adapter has no timestamp-query feature", "profiler", "run without --profile");
  // Dawn rounds timestamps to 65,536 ns unless the device was opened for profiling: a short
  // dispatch would then read 0 or one whole quantum.
  if (!device.exact_timestamps())
    throw Error("the device's timestamps are rounded (timestamp_quantization)", "profiler",
                "open the device with DeviceOptions::profiling = true");
  WGPUQuerySetDescriptor qd{};
  qd.type = WGPUQueryType_Timestamp;
  qd.count = 2 * capacity;
  device.scoped("creating the timestamp query set", [&] { queries_ = QuerySetHandle(wgpuDeviceCreateQuerySet(device.get(), &qd)); });
  resolved_ = device.create_buffer(16ull * capacity, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc, "profiler.resolved");
  readback_ = device.create_buffer(16ull * capacity, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "profiler.readback");
}

WGPUPassTimestampWrites Profiler::next_region(const std::string& name) {
  if (names_.size() + submitted_.size() >= capacity_)
    throw Error("more than " + std::to_string(capacity_) + " profiled regions before collect()", "profiler");
  uint32_t i = static_cast<uint32_t>(submitted_.size() + names_.size());
  names_.push_back(name);
  WGPUPassTimestampWrites tw{};
  tw.querySet = queries_.get();
  tw.beginningOfPassWriteIndex = 2 * i;
  tw.endOfPassWriteIndex = 2 * i + 1;
  return tw;
}

void Profiler::resolve(WGPUCommandEncoder encoder) {
  if (names_.empty()) return;
  uint32_t first = static_cast<uint32_t>(submitted_.size());
  uint32_t count = static_cast<uint32_t>(names_.size());
  wgpuCommandEncoderResolveQuerySet(encoder, queries_.get(), 2 * first, 2 * count, resolved_.get(), 16ull * first);
  submitted_.insert(submitted_.end(), names_.begin(), names_.end());
  names_.clear();
  // The next submit's resolve must land 256-aligned: skip query slots up to a multiple of 16
  // regions (16 bytes each); collect() ignores them. (emplace_back: with the precompiled headers
  // GCC 12 reports a false -Warray-bounds in push_back's move of a temporary string.)
  while (submitted_.size() % 16 != 0 && submitted_.size() < capacity_) submitted_.emplace_back(kPaddingRegion);
}

std::vector<Profiler::Region> Profiler::collect() {
  std::vector<Region> out;
  if (submitted_.empty()) return out;
  uint64_t bytes = 16ull * submitted_.size();
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(device_.get(), nullptr);
  wgpuCommandEncoderCopyBufferToBuffer(enc, resolved_.get(), 0, readback_.get(), 0, bytes);
  WGPUCommandBuffer cmd = wgpuCommandEncoderFinish(enc, nullptr);
  device_.submit(cmd);
  wgpuCommandBufferRelease(cmd);
  wgpuCommandEncoderRelease(enc);
  std::vector<uint64_t> t(2 * submitted_.size());
  device_.map_read(readback_.get(), bytes, [&](const uint8_t* p) { std::memcpy(t.data(), p, bytes); });
  for (size_t i = 0; i < submitted_.size(); i++) {
    if (submitted_[i] == kPaddingRegion) continue;
    Region r{submitted_[i], t[2 * i], std::max(t[2 * i], t[2 * i + 1])};
    auto& [n, ms] = totals_[r.name];
    n++;
    ms += r.ms();
    out.push_back(std::move(r));
  }
  submitted_.clear();
  return out;
}

std::vector<Profiler::Summary> Profiler::summary() const {
  std::vector<Summary> s;
  for (const auto& [name, v] : totals_) s.push_back({name, v.first, v.second});
  std::sort(s.begin(), s.end(), [](const Summary& a, const Summary& b) { return a.total_ms > b.total_ms; });
  return s;
}

std::string Profiler::table() const {
  auto s = summary();
  double total = 0;
  for (const auto& e : s) total += e.total_ms;
  std::string out;
  char line[256];
  snprintf(line, sizeof line, "%-56s %8s %12s %10s %6s\n", "kernel", "count", "total ms", "mean us", "share");
  out += line;
  for (const auto& e : s) {
    snprintf(line, sizeof line, "%-56s %8llu %12.3f %10.2f %5.1f%%\n", e.name.substr(0, 56).c_str(),
             static_cast<unsigned long long>(e.count), e.total_ms, 1e3 * e.total_ms / e.count,
             total > 0 ? 100.0 * e.total_ms / total : 0.0);
    out += line;
  }
  snprintf(line, sizeof line, "%-56s %8s %12.3f\n", "total", "", total);
  out += line;
  return out;
}

nlohmann::json Profiler::to_json() const {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& e : summary()) j.push_back({{"kernel", e.name}, {"count", e.count}, {"total_ms", e.total_ms}, {"mean_us", 1e3 * e.total_ms / e.count}});
  return j;
}

}  // namespace ember::gpu
