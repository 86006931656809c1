// A kernel dispatch prepared once (pipeline, parameter buffer, bind group, grid) and recorded any
// number of times: graphs build these when they are created, never per step.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/kernel.h"
#include "gpu/recorder.h"

namespace ember::kernels {

struct Dispatch {
  const gpu::Kernel* kernel = nullptr;
  gpu::Buffer params;  // the uniform the bind group refers to (owned here)
  gpu::BindGroup group;
  uint32_t x = 1, y = 1, z = 1;
  std::string region;  // profile name; the kernel label when empty

  void record(gpu::Recorder& rec) const { rec.dispatch(*kernel, group, x, y, z, region); }
};

// Splits n workgroups over x and y (x <= 65535) for 1-d kernels that fold y back into their index.
inline void grid_1d(Dispatch& d, uint64_t workgroups) {
  d.x = uint32_t(workgroups < 65535 ? workgroups : 65535);
  d.y = uint32_t((workgroups + 65534) / 65535);
}

}  // namespace ember::kernels
