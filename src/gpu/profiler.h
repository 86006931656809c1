// GPU timestamp profiler: named regions (one compute pass each), times in nanoseconds.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/device.h"

namespace ember::gpu {

using QuerySetHandle = Handle<WGPUQuerySet, wgpuQuerySetRelease>;

class Profiler {
 public:
  // `capacity`: regions per submit. Throws a clear error if the device has no timestamp-query.
  explicit Profiler(const Device& device, uint32_t capacity = 4096);

  struct Region {
    std::string name;
    uint64_t begin_ns, end_ns;
    double ms() const { return (end_ns - begin_ns) / 1e6; }
  };
  // Reads back the regions of everything submitted since the last collect() (waits for the GPU).
  std::vector<Region> collect();

  // Total time and count per name over all collected regions, most expensive first.
  struct Summary {
    std::string name;
    uint64_t count;
    double total_ms;
  };
  std::vector<Summary> summary() const;
  std::string table() const;
  nlohmann::json to_json() const;
  void clear_summary() { totals_.clear(); }

  // Used by Recorder.
  WGPUPassTimestampWrites next_region(const std::string& name);
  void resolve(WGPUCommandEncoder encoder);

 private:
  const Device& device_;
  uint32_t capacity_;
  QuerySetHandle queries_;
  Buffer resolved_, readback_;
  std::vector<std::string> names_;       // regions recorded, not yet resolved
  std::vector<std::string> submitted_;   // regions resolved into resolved_
  std::map<std::string, std::pair<uint64_t, double>> totals_;
};

}  // namespace ember::gpu
