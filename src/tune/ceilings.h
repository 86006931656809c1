// What this GPU can do through Dawn, measured: the ceilings every floor in ember's benchmarks
// and the tuner is computed from (bytes / bandwidth, dispatches x per-dispatch cost).
#pragma once

#include <nlohmann/json.hpp>

#include "gpu/kernel.h"

namespace ember::tune {

struct Ceilings {
  double read_gbps = 0;           // GPU-timestamp median, grid-stride 16-byte loads
  double bytes_read = 0;          // size of the buffer read
  uint32_t read_groups = 0;       // workgroups of the read
  double dispatch_gpu_us = 0;     // GPU time per tiny dispatch, many in one pass
  double dispatch_cpu_us = 0;     // CPU encode + submit + wait per dispatch, many in one submit
  double submit_wait_us = 0;      // one tiny submit + wait for completion
  nlohmann::json to_json() const;
};

// `max_bytes`: largest buffer to read (capped by the adapter's binding limit). `repeats`: timed
// runs after a warm-up; medians are reported. `read_groups`: workgroups of 256 threads that share
// the read (a short read's time depends on it).
Ceilings measure_ceilings(const gpu::Device& device, gpu::KernelCache& kernels, uint64_t max_bytes = 1ull << 30,
                          int repeats = 7, uint32_t read_groups = 16384);

}  // namespace ember::tune
