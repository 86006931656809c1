// `ember dequant --stage DIR --out CKPT.safetensors`: a stage pack's dequantized weights (f32)
// under the upstream state-dict names, for comparison with PyTorch (the metadata's "config" holds
// the model config: the text encoder's config.json, or the ss-flow config its shapes imply). `ember dequant --model DIR
// --out DIR_HF`: an LLM pack's as a Hugging Face LFM2 checkpoint (formats/lfm2_export.h).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "common/error.h"
#include "formats/lfm2_export.h"
#include "formats/safetensors.h"
#include "formats/ss_decoder_config.h"
#include "formats/ss_flow_config.h"
#include "formats/trellis_pack.h"

namespace ember::cli {

void dequant_stage_pack(const std::filesystem::path& dir, const OutputTarget& out_target) {
  OutputTarget target = out_target;
  target.kind = formats::safetensors_output("dequantized-stage", "dequantized checkpoint written by ember");
  target.inputs.emplace_back("--stage", dir);
  check_output(target);
  const std::filesystem::path& out = target.path;
  auto pack = formats::StagePack::open(dir);
  std::vector<formats::TensorToWrite> tensors;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, t] : pack.manifest().tensors) {
    std::vector<float> v = pack.dequantize(name);
    formats::TensorToWrite w{name, formats::DType::F32, t.shape, std::vector<uint8_t>(v.size() * 4)};
    std::memcpy(w.bytes.data(), v.data(), w.bytes.size());
    tensors.push_back(std::move(w));
    shapes[name] = t.shape;
  }
  std::map<std::string, std::string> meta{{"format", "pt"},
                                          {formats::kEmberOutputKey, "dequantized-stage"},
                                          {"stage", pack.manifest().stage},
                                          {"upstream_revision", pack.manifest().upstream_revision}};
  const auto& files = pack.manifest().files;
  if (std::any_of(files.begin(), files.end(), [](const formats::ShardInfo& f) { return f.file == "config.json"; })) {
    meta["config"] = pack.side_file("config.json");  // the text encoder's CLIPTextConfig
  } else {
    try {
      if (pack.manifest().stage == "sparseStructureDecoder") {
        meta["config"] = formats::infer_ss_decoder_config(shapes, dir.string()).to_json().dump();
      } else {
        meta["config"] = formats::infer_ss_flow_config(shapes, dir.string()).to_json().dump();
      }
    } catch (const Error&) {
      // a stage whose config ember cannot infer: the weights alone
    }
  }
  write_output_file(target, [&](const std::filesystem::path& tmp) { formats::write_safetensors(tmp, tensors, meta); });
  std::printf("wrote %s: %zu tensors (f32, dequantized from %s)\n", out.c_str(), tensors.size(), dir.c_str());
}

namespace {

void dequant_llm_pack(const std::filesystem::path& dir, const OutputTarget& out, const std::string& down) {
  auto pack = formats::LlmPack::open(dir);
  auto r = formats::export_lfm2_checkpoint(pack, out, down);
  std::printf("wrote %s: config.json, model.safetensors (%zu tensors, %.1f MB f32, feed_forward.w2 from mlp.down.%s), tokenizer.json\n",
              out.path.c_str(), r.tensors, r.bytes / 1e6, r.down_copy.c_str());
  if (r.rope_estimated)
    std::printf("runtime.json has no ropeTheta: rope_theta %.17g estimated from the pack's rope tables\n", r.rope_theta);
  if (r.rope_table_error > 0)
    std::printf("note: rope_theta %.17g reproduces the pack's rope tables to %.3g, not exactly\n", r.rope_theta, r.rope_table_error);
  if (r.down_copy == "kquant")
    std::printf("note: `ember pack lfm2` writes a default candidate; set candidate.mlpPair true in the new pack's runtime.json "
                "to run mlp.down.kquant, the copy written here\n");
}

}  // namespace

void add_dequant_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("dequant", "write a pack's dequantized weights as an upstream-style checkpoint");
  auto stage = std::make_shared<std::string>();
  auto model = std::make_shared<std::string>();
  auto down = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  auto* stage_opt = cmd->add_option("--stage", *stage, "TRELLIS stage pack directory (--out CKPT.safetensors)");
  auto* model_opt = cmd->add_option("--model", *model,
                                    "LLM pack directory (--out DIR_HF: config.json, model.safetensors f32 under transformers' "
                                    "names, tokenizer.json; `ember pack lfm2 --from DIR_HF` packs it back to the same weights)");
  stage_opt->excludes(model_opt);
  cmd->add_option("--down", *down, "with --model: the MLP down copy to write, quant or kquant (default: the one the candidate runs)")
      ->check(CLI::IsMember({"quant", "kquant"}))
      ->needs(model_opt);
  cmd->add_option("--out", *out, "output CKPT.safetensors (--stage) or directory (--model)")->required();
  cmd->add_flag("--force", *force, "replace --out if it is a previous output of this command (nothing else is ever replaced)");
  cmd->callback([stage, model, down, out, force] {
    OutputTarget target(*out);
    target.force = *force;
    if (!model->empty()) return dequant_llm_pack(*model, target, *down);
    if (stage->empty()) throw Error("give --stage DIR (TRELLIS stage pack) or --model DIR (LLM pack)", "ember dequant");
    dequant_stage_pack(*stage, target);
  });
}

}  // namespace ember::cli
