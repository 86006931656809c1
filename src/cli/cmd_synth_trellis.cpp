// `ember synth trellis-ss-flow`: a random-weight SparseStructureFlowModel checkpoint with
// upstream's state-dict names and shapes, so tests and demos go through the real packer.
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "common/error.h"
#include "formats/safetensors.h"
#include "formats/ss_flow_config.h"

namespace ember::cli {

void add_synth_trellis_command(CLI::App& app) {
  CLI::App* synth = subcommand_group(app, "synth", "write random-weight checkpoints in upstream formats");
  auto* cmd = synth->add_subcommand("trellis-ss-flow", "TRELLIS SparseStructureFlowModel checkpoint (.safetensors)");
  struct Args {
    std::string config, out;
    bool tiny = false, f16 = false, force = false;
    int64_t seed = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--config", a->config, "upstream model config JSON (default: TRELLIS-text-base ss_flow)");
  cmd->add_flag("--tiny", a->tiny, "tiny configuration for fast tests (resolution 4, 64 channels, 2 blocks)");
  add_seed_option(*cmd, a->seed, "random seed")->required();
  cmd->add_option("--out", a->out, "output CKPT.safetensors")->required();
  cmd->add_flag("--force", a->force, "replace --out if it is a checkpoint this command wrote (nothing else is ever replaced)");
  cmd->add_flag("--f16", a->f16, "store tensors as F16 (as the released fp16 checkpoints) instead of F32");
  cmd->callback([a] {
    if (a->tiny && !a->config.empty()) throw Error("--tiny and --config exclude each other", "ember synth trellis-ss-flow");
    OutputTarget target(a->out);
    target.kind = formats::safetensors_output("trellis-ss-flow-checkpoint", "TRELLIS checkpoint written by ember");
    target.force = a->force;
    if (!a->config.empty()) target.inputs = {{"--config", a->config}};
    check_output(target);
    formats::SsFlowConfig c = a->tiny ? formats::ss_flow_tiny_config()
                              : a->config.empty() ? formats::ss_flow_text_base_config()
                                                  : formats::read_ss_flow_config(a->config);
    auto shapes = formats::ss_flow_tensor_shapes(c);
    const uint64_t seed = resolve_seed(a->seed, "ember synth trellis-ss-flow");
    auto weights = formats::synth_ss_flow_weights(c, seed);
    std::vector<formats::TensorToWrite> out;
    size_t total = 0;
    for (auto& [name, v] : weights) {
      formats::TensorToWrite t{name, a->f16 ? formats::DType::F16 : formats::DType::F32, shapes.at(name), {}};
      if (a->f16) {
        t.bytes.resize(v.size() * 2);
        for (size_t i = 0; i < v.size(); i++) {
          uint16_t h = formats::f32_to_f16(v[i]);
          std::memcpy(t.bytes.data() + 2 * i, &h, 2);
        }
      } else {
        t.bytes.resize(v.size() * 4);
        std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
      }
      std::vector<float>().swap(v);
      total += t.bytes.size();
      out.push_back(std::move(t));
    }
    write_output_file(target, [&](const std::filesystem::path& tmp) {
      formats::write_safetensors(tmp, out, {{"format", "pt"}, {"config", c.to_json().dump()}, {"ember_synth_seed", std::to_string(seed)},
                                            {formats::kEmberOutputKey, "trellis-ss-flow-checkpoint"}});
    });
    std::printf("wrote %s: %zu tensors, %.1f MiB, SparseStructureFlowModel %lld ch, %lld blocks, resolution %lld, seed %llu\n",
                a->out.c_str(), out.size(), total / 1048576.0, static_cast<long long>(c.model_channels),
                static_cast<long long>(c.num_blocks), static_cast<long long>(c.resolution),
                static_cast<unsigned long long>(seed));
  });
}

}  // namespace ember::cli
