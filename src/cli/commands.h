// Each `ember` subcommand registers itself on the CLI11 app from its own file.
#pragma once

#include <CLI/CLI.hpp>

#include "gpu/device.h"

namespace ember::cli {

void add_devices_command(CLI::App& app);
void add_bench_ss_flow(CLI::App& bench);  // under `ember bench`
void add_ss_flow_command(CLI::App& app);
void add_bench_command(CLI::App& app);

// Options every GPU-using command shares: --device, --gpu-fast, --profile.
struct GpuOptions {
  gpu::DeviceOptions device;
  void add_to(CLI::App& cmd);
};

}  // namespace ember::cli
