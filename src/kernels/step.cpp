#include "kernels/step.h"

#include "common/error.h"

namespace ember::kernels {

uint32_t checked_groups(const gpu::Device& device, uint64_t n, const std::string& where) {
  const uint64_t max = device.limits().maxComputeWorkgroupsPerDimension;
  if (n > max) {
    throw Error("dispatch needs " + std::to_string(n) + " workgroups along one dimension, the adapter allows " +
                    std::to_string(max),
                where, "process fewer rows per step (chunk the prefill)");
  }
  return static_cast<uint32_t>(n);
}

}  // namespace ember::kernels
