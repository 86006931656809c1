// `ember dequant --stage DIR --out CKPT.safetensors`: a stage pack's dequantized weights (f32)
// under the upstream state-dict names, for comparison with PyTorch. (`--model` for LLM packs
// belongs beside --stage here.)
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "common/error.h"
#include "formats/safetensors.h"
#include "formats/ss_flow_config.h"
#include "formats/trellis_pack.h"

namespace ember::cli {

void dequant_stage_pack(const std::filesystem::path& dir, const std::filesystem::path& out) {
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
                                          {"stage", pack.manifest().stage},
                                          {"upstream_revision", pack.manifest().upstream_revision}};
  try {
    meta["config"] = formats::infer_ss_flow_config(shapes, dir.string()).to_json().dump();
  } catch (const Error&) {
    // not an ss-flow pack: the weights alone
  }
  formats::write_safetensors(out, tensors, meta);
  std::printf("wrote %s: %zu tensors (f32, dequantized from %s)\n", out.c_str(), tensors.size(), dir.c_str());
}

void add_dequant_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("dequant", "write a pack's dequantized weights as an upstream-style checkpoint");
  auto stage = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("--stage", *stage, "TRELLIS stage pack directory")->required();
  cmd->add_option("--out", *out, "output CKPT.safetensors")->required();
  cmd->callback([stage, out] { dequant_stage_pack(*stage, *out); });
}

}  // namespace ember::cli
