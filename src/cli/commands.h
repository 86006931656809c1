// Each `ember` subcommand registers itself on the CLI11 app from its own file.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

#include "gpu/device.h"

namespace ember::cli {

void add_devices_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_pack_lfm2_command(CLI::App& app);   // `ember pack lfm2`
void add_synth_lfm2_command(CLI::App& app);  // `ember synth lfm2`
void add_inspect_command(CLI::App& app);     // `ember inspect DIR` (LLM or stage pack)

// `ember pack` / `ember synth` hold one subcommand per format, registered from different
// files: this returns the existing group or creates it.
CLI::App* command_group(CLI::App& app, const std::string& name, const std::string& description);

// `ember inspect` for a TRELLIS stage pack (a directory with manifest.json); defined by the
// stage-pack code. cmd_inspect.cpp holds a weak fallback that says it is not built.
void inspect_stage_pack(const std::filesystem::path& dir, bool json);

// Options every GPU-using command shares: --device, --gpu-fast, --profile.
struct GpuOptions {
  gpu::DeviceOptions device;
  void add_to(CLI::App& cmd);
};

}  // namespace ember::cli
