// `ember synth trellis-ss-flow | trellis-ss-decoder`: a random-weight SparseStructureFlowModel or
// SparseStructureDecoder checkpoint with upstream's state-dict names and shapes, so tests and demos go through the real packer.
#include <cstdio>

#include "cli/commands.h"
#include "common/error.h"
#include "formats/safetensors.h"
#include "formats/ss_decoder_config.h"
#include "formats/ss_flow_config.h"

namespace ember::cli {

namespace {

// What both subcommands take: --out (guarded: only a checkpoint of the same kind is replaced, and
// only with --force), --seed (-1: random), --f16.
struct SynthArgs {
  std::string config, out;
  bool f16 = false, force = false;
  int64_t seed = 0;
};

void add_common_options(CLI::App* cmd, SynthArgs& a) {
  add_seed_option(*cmd, a.seed, "random seed (-1: a random one, printed)")->required();
  cmd->add_option("--out", a.out, "output CKPT.safetensors")->required();
  cmd->add_flag("--force", a.force, "replace --out if it is a checkpoint this command wrote (nothing else is ever replaced)");
  cmd->add_flag("--f16", a.f16, "store tensors as F16 (as the released fp16 checkpoints) instead of F32");
}

// The guarded output of one subcommand; checked before any weights are drawn.
OutputTarget checked_target(const SynthArgs& a, const std::string& kind_id, const std::string& kind_name) {
  OutputTarget target(a.out);
  target.kind = formats::safetensors_output(kind_id, kind_name);
  target.force = a.force;
  if (!a.config.empty()) target.inputs = {{"--config", a.config}};
  check_output(target);
  return target;
}

// Writes random weights under upstream's names as .safetensors (F32, or F16 as the released fp16
// checkpoints store them) into `target`, marked as ember's output of `kind_id`; returns the bytes written.
size_t write_synth_checkpoint(const OutputTarget& target, const std::string& kind_id, std::map<std::string, std::vector<float>>& weights,
                              const std::map<std::string, std::vector<int64_t>>& shapes, bool f16,
                              std::map<std::string, std::string> metadata) {
  std::vector<formats::TensorToWrite> out;
  size_t total = 0;
  for (auto& [name, v] : weights) {
    out.push_back(formats::float_tensor(name, shapes.at(name), v, f16));
    total += out.back().bytes.size();
  }
  metadata[formats::kEmberOutputKey] = kind_id;
  write_output_file(target, [&](const std::filesystem::path& tmp) { formats::write_safetensors(tmp, out, metadata); });
  return total;
}

void add_synth_ss_decoder(CLI::App* synth) {
  auto* cmd = synth->add_subcommand("trellis-ss-decoder", "TRELLIS SparseStructureDecoder checkpoint (.safetensors)");
  struct Args : SynthArgs {
    bool small = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--config", a->config, "upstream model config JSON (default: ss_dec_conv3d_16l8_fp16, channels [512, 128, 32])");
  cmd->add_flag("--small", a->small, "small configuration for fast tests (channels [32, 16, 8], one res block per level)");
  add_common_options(cmd, *a);
  cmd->callback([a] {
    if (a->small && !a->config.empty()) throw Error("--small and --config exclude each other", "ember synth trellis-ss-decoder");
    const std::string kind = "trellis-ss-decoder-checkpoint";
    const OutputTarget target = checked_target(*a, kind, "TRELLIS checkpoint written by ember");
    const formats::SsDecoderConfig c = a->small ? formats::ss_decoder_small_config()
                                       : a->config.empty() ? formats::ss_decoder_released_config()
                                                           : formats::read_ss_decoder_config(a->config);
    const uint64_t seed = resolve_seed(a->seed, "ember synth trellis-ss-decoder");
    auto weights = formats::synth_ss_decoder_weights(c, seed);
    const size_t n = weights.size();
    const size_t total = write_synth_checkpoint(target, kind, weights, formats::ss_decoder_tensor_shapes(c), a->f16,
                                                {{"format", "pt"}, {"config", c.to_json().dump()},
                                                 {"ember_synth_seed", std::to_string(seed)}});
    std::printf("wrote %s: %zu tensors, %.1f MiB, SparseStructureDecoder channels %s, seed %llu\n", a->out.c_str(), n,
                total / 1048576.0, nlohmann::json(c.channels).dump().c_str(), static_cast<unsigned long long>(seed));
  });
}

}  // namespace

void add_synth_trellis_command(CLI::App& app) {
  CLI::App* synth = subcommand_group(app, "synth", "write random-weight checkpoints in upstream formats");
  add_synth_ss_decoder(synth);
  auto* cmd = synth->add_subcommand("trellis-ss-flow", "TRELLIS SparseStructureFlowModel checkpoint (.safetensors)");
  struct Args : SynthArgs {
    bool tiny = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--config", a->config, "upstream model config JSON (default: TRELLIS-text-base ss_flow)");
  cmd->add_flag("--tiny", a->tiny, "tiny configuration for fast tests (resolution 4, 64 channels, 2 blocks)");
  add_common_options(cmd, *a);
  cmd->callback([a] {
    if (a->tiny && !a->config.empty()) throw Error("--tiny and --config exclude each other", "ember synth trellis-ss-flow");
    const std::string kind = "trellis-ss-flow-checkpoint";
    const OutputTarget target = checked_target(*a, kind, "TRELLIS checkpoint written by ember");
    formats::SsFlowConfig c = a->tiny ? formats::ss_flow_tiny_config()
                              : a->config.empty() ? formats::ss_flow_text_base_config()
                                                  : formats::read_ss_flow_config(a->config);
    const uint64_t seed = resolve_seed(a->seed, "ember synth trellis-ss-flow");
    auto weights = formats::synth_ss_flow_weights(c, seed);
    const size_t n = weights.size();
    const size_t total = write_synth_checkpoint(target, kind, weights, formats::ss_flow_tensor_shapes(c), a->f16,
                                                {{"format", "pt"}, {"config", c.to_json().dump()},
                                                 {"ember_synth_seed", std::to_string(seed)}});
    std::printf("wrote %s: %zu tensors, %.1f MiB, SparseStructureFlowModel %lld ch, %lld blocks, resolution %lld, seed %llu\n",
                a->out.c_str(), n, total / 1048576.0, static_cast<long long>(c.model_channels),
                static_cast<long long>(c.num_blocks), static_cast<long long>(c.resolution),
                static_cast<unsigned long long>(seed));
  });
}

}  // namespace ember::cli
