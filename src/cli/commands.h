// Each `ember` subcommand registers itself on the CLI11 app from its own file.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

#include "common/output_guard.h"
#include "gpu/device.h"

namespace ember::cli {

void add_devices_command(CLI::App& app);
void add_bench_ss_flow(CLI::App& bench);  // under `ember bench`
void add_ss_flow_command(CLI::App& app);
void add_ss_flow_forward_command(CLI::App& app);  // ember ss-flow-forward (one forward, no sampler)
void add_bench_command(CLI::App& app);
void add_tune_command(CLI::App& app);      // ember tune
void add_pack_lfm2_command(CLI::App& app);   // `ember pack lfm2`
void add_synth_lfm2_command(CLI::App& app);  // `ember synth lfm2`
void add_inspect_command(CLI::App& app);     // `ember inspect DIR` (LLM or stage pack)

// Command groups several files add to (`ember synth lfm2|trellis-ss-flow`, `ember pack
// lfm2|trellis`): returns the existing subcommand `name` or creates it (requiring one
// sub-subcommand).
CLI::App* subcommand_group(CLI::App& app, const std::string& name, const std::string& description);

// TRELLIS stage packs (cmd_synth_trellis.cpp, cmd_pack_trellis.cpp, cmd_dequant.cpp,
// inspect_stage.cpp).
void add_synth_trellis_command(CLI::App& app);  // ember synth trellis-ss-flow
void add_synth_clip_text_command(CLI::App& app);  // ember synth clip-text
void add_encode_text_command(CLI::App& app);      // ember encode-text (the CLIP text encoder stage)
void add_bench_text_encoder(CLI::App& bench);     // under `ember bench`
void add_pack_trellis_command(CLI::App& app);   // ember pack trellis
void add_dequant_command(CLI::App& app);        // ember dequant --stage DIR | --model DIR --out ...
void dequant_stage_pack(const std::filesystem::path& dir, const OutputTarget& out);
// The stage half of `ember inspect DIR` (DIR holds manifest.json): tensor table, bytes by
// kind, quantization, validation verdict; JSON with `json`. Returns false when the pack is invalid.
bool inspect_stage_pack(const std::filesystem::path& dir, bool json);
void add_tokenize_command(CLI::App& app);
void add_generate_command(CLI::App& app);  // ember generate
void add_logits_command(CLI::App& app);    // ember logits
void add_chat_command(CLI::App& app);      // ember chat
void add_detokenize_command(CLI::App& app);
void add_chat_template_command(CLI::App& app);  // ember chat-template
void add_serve_command(CLI::App& app);    // ember serve (OpenAI-compatible HTTP server)
void add_ss_decode_command(CLI::App& app);  // ember ss-decode (sparse-structure decoder)
void add_text_to_3d_command(CLI::App& app);  // ember text-to-3d (prompt -> GLB / PLY / PNG)
void add_synth_pipeline_command(CLI::App& app);  // ember synth trellis-pipeline
void add_bench_text_to_3d(CLI::App& bench);  // under `ember bench`

// `--seed` (seed_option.cpp): any value >= 0, or -1 for a random seed that resolve_seed draws
// and prints on stderr ("COMMAND: seed N") so the run can be repeated.
CLI::Option* add_seed_option(CLI::App& cmd, int64_t& seed, const std::string& description);
uint64_t resolve_seed(int64_t seed, const std::string& command);

// Options every GPU-using command shares: --device, --gpu-fast, --profile.
struct GpuOptions {
  gpu::DeviceOptions device;
  void add_to(CLI::App& cmd);
};

}  // namespace ember::cli
