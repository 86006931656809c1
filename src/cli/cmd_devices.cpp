// `ember devices`: which WebGPU adapters this machine has and what each offers.
#include <cstdio>

#include "cli/commands.h"
#include "gpu/adapter.h"

namespace ember::cli {

void add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "list WebGPU adapters with their features and limits");
  auto json = std::make_shared<bool>(false);
  auto with_null = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print JSON");
  cmd->add_flag("--include-null", *with_null, "also list Dawn's Null adapter (it computes nothing)");
  cmd->callback([json, with_null] {
    gpu::Instance instance;
    auto adapters = instance.enumerate(*with_null);
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (size_t i = 0; i < adapters.size(); i++) {
        nlohmann::json a = adapters[i].description.to_json();
        a["index"] = i;
        a["default"] = i == 0;
        out.push_back(a);
      }
      std::printf("%s\n", nlohmann::json{{"adapters", out}}.dump(2).c_str());
      return;
    }
    if (adapters.empty()) std::printf("no WebGPU adapters found (is a Vulkan driver installed? see scripts/setup.sh)\n");
    for (size_t i = 0; i < adapters.size(); i++) {
      const auto& d = adapters[i].description;
      std::printf("[%zu]%s %s (%s, %s, %s)\n", i, i == 0 ? " default" : "", d.name().c_str(), d.vendor.c_str(), d.backend.c_str(), d.type.c_str());
      std::printf("    driver: %s\n", d.driver.c_str());
      std::printf("    subgroup size: %u..%u\n", d.subgroup_min, d.subgroup_max);
      std::printf("    features:");
      for (const auto& f : d.features) std::printf(" %s", f.c_str());
      std::printf("\n    wgsl: packed_4x8_integer_dot_product=%s\n", d.dot4_i8_packed ? "yes" : "no");
      std::printf("    limits: maxStorageBufferBindingSize=%llu maxBufferSize=%llu workgroupStorage=%u invocations=%u\n",
                  static_cast<unsigned long long>(d.limits.maxStorageBufferBindingSize),
                  static_cast<unsigned long long>(d.limits.maxBufferSize), d.limits.maxComputeWorkgroupStorageSize,
                  d.limits.maxComputeInvocationsPerWorkgroup);
    }
  });
}

}  // namespace ember::cli
