// `ember pack trellis --stage ss-flow|ss-decoder|text-encoder`: a TRELLIS checkpoint (.safetensors)
// or a Hugging Face CLIP checkpoint directory -> stage pack.
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "common/error.h"
#include "formats/safetensors.h"
#include "formats/ss_decoder_config.h"
#include "formats/ss_flow_config.h"
#include "formats/trellis_packer.h"
#include "trellis/clip_checkpoint.h"

namespace ember::cli {
namespace {

struct Args {
  std::string stage, from, config, out, revision;
  bool quiet = false, force = false;
};

// The sparse-structure flow or decoder (a TRELLIS .safetensors checkpoint and its config).
std::vector<formats::TensorPackReport> pack_ss_stage(const Args& a, const OutputTarget& out, formats::StagePackOptions o) {
  auto ckpt = formats::SafetensorsFile::open(a.from);
  std::map<std::string, std::vector<int64_t>> found;
  for (const auto& [name, t] : ckpt.tensors()) found[name] = t.shape;
  std::map<std::string, std::vector<int64_t>> shapes;
  if (a.stage == "ss-decoder") {
    shapes = formats::ss_decoder_tensor_shapes(a.config.empty() ? formats::infer_ss_decoder_config(found, a.from)
                                                                : formats::read_ss_decoder_config(a.config));
    o.stage = "sparseStructureDecoder";
  } else {
    shapes = formats::ss_flow_tensor_shapes(a.config.empty() ? formats::infer_ss_flow_config(found, a.from)
                                                             : formats::read_ss_flow_config(a.config));
    o.stage = "sparseStructureFlow";
  }
  for (const auto& [name, shape] : shapes) {
    auto it = found.find(name);
    if (it == found.end())
      throw Error("the checkpoint lacks tensor '" + name + "'", a.from, "the checkpoint is incomplete or does not match the config");
    if (it->second != shape)
      throw Error("tensor '" + name + "' has shape " + nlohmann::json(it->second).dump() + ", the config needs " +
                      nlohmann::json(shape).dump(), a.from, "pass the config this checkpoint was trained with");
  }
  for (const auto& [name, shape] : found)
    if (!shapes.count(name)) std::fprintf(stderr, "ember: note: ignoring tensor '%s' (not part of the model)\n", name.c_str());
  o.upstream_revision = !a.revision.empty() ? a.revision
                        : ckpt.metadata().count("upstream_revision") ? ckpt.metadata().at("upstream_revision")
                        // `ember synth` checkpoints: the manifest says the weights are random.
                        : ckpt.metadata().count("ember_synth_seed") ? "synthetic-seed-" + ckpt.metadata().at("ember_synth_seed")
                                                                    : "unknown";
  return formats::write_stage_pack(out, shapes, [&](const std::string& n) { return ckpt.to_f32(n); }, o);
}

std::vector<formats::TensorPackReport> pack_text_encoder(const Args& a, const OutputTarget& out, formats::StagePackOptions o) {
  if (!a.config.empty()) throw Error("--config is for ss-flow and ss-decoder: a CLIP checkpoint directory has its own config.json", "--config");
  auto ckpt = trellis::open_clip_checkpoint(a.from);
  if (!ckpt.ignored.empty()) {
    size_t vision = 0;
    for (const auto& n : ckpt.ignored) vision += n.rfind("vision_model.", 0) == 0 || n == "visual_projection.weight";
    std::fprintf(stderr, "ember: note: ignoring %zu tensors that are not CLIPTextModel's (%zu of the vision model), e.g. '%s'\n",
                 ckpt.ignored.size(), vision, ckpt.ignored.front().c_str());
  }
  o.upstream_revision = a.revision.empty() ? "unknown" : a.revision;
  return trellis::pack_clip_text_stage(ckpt, out, o);
}

}  // namespace

void add_pack_trellis_command(CLI::App& app) {
  CLI::App* pack = subcommand_group(app, "pack", "convert checkpoints into ember packs");
  auto* cmd = pack->add_subcommand("trellis", "TRELLIS checkpoint -> stage pack (manifest.json + shards)");
  auto a = std::make_shared<Args>();
  cmd->add_option("--stage", a->stage, "which stage: ss-flow (sparse-structure flow), ss-decoder (sparse-structure decoder) or text-encoder (CLIP text model)")->required();
  cmd->add_option("--from", a->from,
                  "ss-flow, ss-decoder: checkpoint .safetensors; text-encoder: a Hugging Face CLIP checkpoint directory (config.json, "
                  "model.safetensors, tokenizer.json)")
      ->required();
  cmd->add_option("--config", a->config, "ss-flow, ss-decoder: upstream model config JSON (default: inferred from tensor shapes)");
  cmd->add_option("--out", a->out, "output stage directory")->required();
  cmd->add_option("--upstream-revision", a->revision, "upstream revision recorded in the manifest");
  cmd->add_flag("--quiet", a->quiet, "no progress and no per-tensor table");
  cmd->add_flag("--force", a->force, "replace --out if it holds a previous stage pack (nothing else is ever replaced)");
  cmd->callback([a] {
    if (a->stage != "ss-flow" && a->stage != "ss-decoder" && a->stage != "text-encoder")
      throw Error("unknown stage '" + a->stage + "'", "--stage",
                  "ember packs --stage ss-flow (sparse-structure flow), ss-decoder (sparse-structure decoder) and text-encoder (CLIP text model)");
    OutputTarget out(a->out);
    out.kind = formats::stage_pack_output();
    out.force = a->force;
    out.inputs = {{"--from", a->from}};
    if (!a->config.empty()) out.inputs.emplace_back("--config", a->config);
    check_output(out);
    formats::StagePackOptions o;
    if (!a->quiet)
      o.progress = [](size_t i, size_t n, const std::string& name) {
        std::fprintf(stderr, "\r[%3zu/%zu] %-48s", i + 1, n, name.c_str());
        if (i + 1 == n) std::fprintf(stderr, "\n");
      };
    auto reports = a->stage == "text-encoder" ? pack_text_encoder(*a, out, o) : pack_ss_stage(*a, out, o);
    double worst = 0, sum = 0;
    size_t nq = 0;
    std::string worst_name;
    if (!a->quiet) std::printf("%-56s %-20s %10s %10s\n", "tensor", "encoding", "rel_l2", "max_abs");
    for (const auto& r : reports) {
      if (!a->quiet) std::printf("%-56s %-20s %10.3e %10.3e\n", r.name.c_str(), r.encoding.c_str(), r.rel_l2, r.max_abs);
      if (r.encoding == "symmetric-quantized") {
        nq++;
        sum += r.rel_l2;
        if (r.rel_l2 >= worst) worst = r.rel_l2, worst_name = r.name;
      }
    }
    std::printf("packed %zu tensors (%zu int8) into %s; int8 rel_l2 mean %.3e, worst %.3e (%s)\n", reports.size(), nq,
                a->out.c_str(), nq ? sum / static_cast<double>(nq) : 0.0, worst, worst_name.c_str());
  });
}

}  // namespace ember::cli
