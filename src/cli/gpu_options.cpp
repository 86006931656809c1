#include "cli/commands.h"

namespace ember::cli {

void GpuOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--device", device.adapter, "adapter: index from `ember devices`, or part of its name (default: the high-performance one)");
  cmd.add_flag("--gpu-fast", device.fast, "skip Dawn's validation and shader bounds checks (faster; for trusted packs)");
  cmd.add_option("--without-feature", device.without, "do not use an optional feature (shader-f16, subgroups, timestamp-query)");
}

}  // namespace ember::cli
