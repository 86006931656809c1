#include "cli/commands.h"

namespace ember::cli {

void GpuOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--device", device.adapter, "adapter: index from `ember devices`, or part of its name (default: the high-performance one)");
  cmd.add_flag("--gpu-fast", device.fast, "skip Dawn's API validation too (cheaper encoding; misuse is no longer a clear error)");
  cmd.add_flag("--gpu-bounds-checks", device.bounds_checks, "turn on Dawn's shader bounds checks (slower; to debug a kernel)");
  cmd.add_option("--without-feature", device.without, "do not use an optional feature (shader-f16, subgroups, timestamp-query)");
}

}  // namespace ember::cli
