// Instance and adapters: what WebGPU implementations this machine offers, and what each can do.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/handle.h"
#include "gpu/webgpu_api.h"

namespace ember::gpu {

using InstanceHandle = Handle<WGPUInstance, wgpuInstanceRelease>;
using AdapterHandle = Handle<WGPUAdapter, wgpuAdapterRelease>;

// Everything ember decides kernels by, read once from the adapter.
struct AdapterDescription {
  std::string vendor, architecture, device, driver;  // driver: Dawn's "description" field
  std::string backend;                               // "Vulkan", "Null", ...
  std::string type;                                  // "DiscreteGPU", "IntegratedGPU", "CPU", "Unknown"
  uint32_t vendor_id = 0, device_id = 0;
  uint32_t subgroup_min = 0, subgroup_max = 0;
  std::vector<std::string> features;                 // names as WebGPU spells them ("shader-f16")
  bool shader_f16 = false, subgroups = false, timestamp_query = false;
  bool dot4_i8_packed = false;                       // WGSL language feature packed_4x8_integer_dot_product
  WGPULimits limits{};

  bool is_null() const { return backend == "Null"; }
  std::string name() const { return device.empty() ? description_fallback() : device; }
  nlohmann::json to_json() const;

 private:
  std::string description_fallback() const { return vendor + " " + backend; }
};

// Owns the Dawn instance. One per process is plenty; nothing is global.
class Instance {
 public:
  Instance();
  WGPUInstance get() const { return instance_.get(); }

  // All adapters Dawn offers (deduplicated), the real ones first; the Null backend is left out
  // unless `include_null`.
  struct Found {
    AdapterHandle adapter;
    AdapterDescription description;
  };
  std::vector<Found> enumerate(bool include_null = false) const;

  // `selector`: "" = the high-performance adapter (falling back to the CPU one), a decimal index
  // into enumerate(), or a case-insensitive substring of the adapter's name/vendor/driver.
  Found select(const std::string& selector) const;

  // Runs the Dawn callbacks that are due, without waiting.
  void process_events() const { wgpuInstanceProcessEvents(instance_.get()); }

  // Runs Dawn's callbacks until `done` becomes true. Polls without pause for the first ~100
  // polls (longer than a GPU round trip), then yields the core between polls: on a CPU adapter the
  // GPU's work runs on this machine's cores, and a spinning waiter takes one of them.
  template <typename Pred>
  void wait_until(Pred done) const {
    for (int polls = 0; !done(); polls++) {
      wgpuInstanceProcessEvents(instance_.get());
      if (polls >= 100) std::this_thread::yield();
    }
  }

 private:
  InstanceHandle instance_;
};

AdapterDescription describe(WGPUInstance instance, WGPUAdapter adapter);
std::string feature_name(WGPUFeatureName f);

}  // namespace ember::gpu
