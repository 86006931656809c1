// `ember synth trellis-pipeline`: a complete text-to-3D pipeline folder of random weights (text
// encoder, ss-flow and ss-decoder stages, packed as `ember pack trellis` packs them, plus
// pipeline.json), so the demo and the tests run without downloads. The manifests record
// "synthetic-seed-N" as the upstream revision; `ember text-to-3d` then says the shape is noise.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "formats/ss_decoder_config.h"
#include "formats/ss_flow_config.h"
#include "formats/trellis_packer.h"
#include "trellis/clip_checkpoint.h"
#include "trellis/pipeline_config.h"

namespace ember::cli {

void add_synth_pipeline_command(CLI::App& app) {
  CLI::App* synth = subcommand_group(app, "synth", "write random-weight checkpoints in upstream formats");
  auto* cmd = synth->add_subcommand("trellis-pipeline", "a TRELLIS text-to-3D pipeline folder of random stages + pipeline.json");
  struct Args {
    std::string out;
    bool small = false;
    uint64_t seed = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->add_flag("--small", a->small,
                "small stages for tests (CLIP 2 layers x 128, ss-flow resolution 4 x 128 channels, decoder [32, 16, 8]); "
                "default: the released shapes (CLIP ViT-L/14 text, TRELLIS-text-base ss-flow, ss_dec_conv3d_16l8)");
  cmd->add_option("--seed", a->seed, "random seed")->capture_default_str();
  cmd->add_option("--out", a->out, "output pipeline folder (must not exist)")->required();
  cmd->callback([a] {
    namespace fs = std::filesystem;
    if (fs::exists(a->out)) throw Error("already exists", "--out " + a->out, "ember does not overwrite: choose a new folder");
    const auto clip = a->small ? formats::clip_tiny_text_config() : formats::clip_vit_l14_text_config();
    auto flow = a->small ? formats::ss_flow_tiny_config() : formats::ss_flow_text_base_config();
    flow.cond_channels = clip.hidden_size;  // the flow attends to the text encoder's output
    const auto dec = a->small ? formats::ss_decoder_small_config() : formats::ss_decoder_released_config();
    const std::string revision = "synthetic-seed-" + std::to_string(a->seed);
    trellis::PipelineConfig pc;
    build_directory_atomic(a->out, [&](const fs::path& tmp) {
      std::fprintf(stderr, "synth: text encoder\n");
      trellis::write_synth_clip_checkpoint(tmp / "clip_checkpoint", clip, a->seed, false);
      formats::StagePackOptions o;
      o.upstream_revision = revision;
      trellis::pack_clip_text_stage(trellis::open_clip_checkpoint(tmp / "clip_checkpoint"), tmp / pc.text_encoder, o);
      fs::remove_all(tmp / "clip_checkpoint");
      std::fprintf(stderr, "synth: ss-flow\n");
      {
        auto w = formats::synth_ss_flow_weights(flow, a->seed + 1);
        o.stage = "sparseStructureFlow";
        formats::write_stage_pack(tmp / pc.ss_flow, formats::ss_flow_tensor_shapes(flow), [&](const std::string& n) { return w.at(n); }, o);
      }
      std::fprintf(stderr, "synth: ss-decoder\n");
      {
        auto w = formats::synth_ss_decoder_weights(dec, a->seed + 2);
        o.stage = "sparseStructureDecoder";
        formats::write_stage_pack(tmp / pc.ss_decoder, formats::ss_decoder_tensor_shapes(dec), [&](const std::string& n) { return w.at(n); }, o);
      }
      write_file_atomic(tmp / trellis::kPipelineFile, trellis::pipeline_json(pc));
    });
    std::printf("wrote %s: %s stages (text_encoder, ss_flow, ss_decoder) of random weights, seed %llu, and pipeline.json\n",
                a->out.c_str(), a->small ? "small" : "released-shape", static_cast<unsigned long long>(a->seed));
  });
}

}  // namespace ember::cli
