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
  double stage_gpu_us = 0;        // GPU time per dependent stage (dependent_stage.wgsl), many in one pass
  uint32_t stage_groups = 0;      // workgroups of each stage
  double stage_bytes = 0;         // weight bytes each stage read (from memory: a new slice each stage)
  double dispatch_cpu_us = 0;     // CPU encode + submit + wait per dispatch, many in one submit
  double submit_wait_us = 0;      // one tiny submit + wait for completion
  double warmup_ms = 0;           // wall time of the untimed reads first
  double read_gbps_first = 0;     // the first timed round's median (below read_gbps: clocks still rising)
  int read_rounds = 0;            // timed rounds of the read until one was no faster than the one before
  nlohmann::json to_json() const;
};

struct CeilingOptions {
  uint64_t max_bytes = 1ull << 30;  // largest buffer to read (capped by the adapter's binding limit)
  int repeats = 7;                  // timed runs after a warm-up; medians are reported
  uint32_t read_groups = 16384;     // workgroups of 256 threads that share the read (a short read's time depends on it)
  uint32_t stage_groups = 128;      // workgroups of each dependent stage (a decode matvec of 1,024 rows runs ~128)
  uint64_t stage_bytes = 0;         // weight bytes each stage reads besides its input (a decode matvec: 0.6-3.3 MB)
  double warmup_ms = 500;           // untimed reads first, for at least this long: an idle GPU clocks up
};

Ceilings measure_ceilings(const gpu::Device& device, gpu::KernelCache& kernels, const CeilingOptions& options = {});

}  // namespace ember::tune
