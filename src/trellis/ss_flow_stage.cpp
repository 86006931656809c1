#include "trellis/ss_flow_stage.h"

#include "common/error.h"

namespace ember::trellis {

TensorView PackTensors::get(const std::string& name) const {
  const formats::StageTensor& t = pack_.tensor(name);
  TensorView v;
  v.name = name;
  v.shape = t.shape;
  v.quantized = t.quantized();
  if (v.quantized && (t.bits != 8 || t.group_size != kQuantGroup || t.output_tile != kOutputTile))
    throw Error("unsupported quantization (bits " + std::to_string(t.bits) + ", group " + std::to_string(t.group_size) +
                    ", tile " + std::to_string(t.output_tile) + "): ember reads int8, group 64, tile 16",
                "tensor " + name + " in " + origin(), "repack the checkpoint with `ember pack trellis`");
  v.rows = t.rows;
  v.columns = t.columns;
  v.padded_rows = t.padded_rows;
  v.padded_columns = t.padded_columns;
  v.data = pack_.data(t);
  if (v.quantized) v.scales = pack_.scales(t);
  return v;
}

std::map<std::string, std::vector<int64_t>> PackTensors::shapes() const {
  std::map<std::string, std::vector<int64_t>> s;
  for (const auto& [name, t] : pack_.manifest().tensors) s[name] = t.shape;
  return s;
}

std::unique_ptr<PackTensors> open_ss_flow_stage(const std::filesystem::path& dir) {
  auto p = std::make_unique<PackTensors>(formats::StagePack::open(dir, true));
  if (p->pack().manifest().stage != "sparseStructureFlow")
    throw Error("this stage is '" + p->pack().manifest().stage + "', not sparseStructureFlow", p->origin(),
                "point --stage at the ss-flow stage of a TRELLIS pack");
  return p;
}

formats::SsFlowConfig ss_flow_config_of(const TensorSource& source) {
  const std::string where = source.origin();
  formats::SsFlowConfig c = formats::infer_ss_flow_config(source.shapes(), where);
  const char* fix = "ember runs TRELLIS's released sparse-structure flow models (DiT, heads of 64 channels)";
  if (c.head_dim() != 64)
    throw Error("heads of " + std::to_string(c.head_dim()) + " channels (" + std::to_string(c.model_channels) + " / " +
                    std::to_string(c.num_heads) + "); the attention kernels implement 64",
                where + ": tensor blocks.0.self_attn.q_rms_norm.gamma", fix);
  if (!c.qk_rms_norm)
    throw Error("no q/k RMS norm in self-attention (blocks.0.self_attn.q_rms_norm.gamma is missing)", where, fix);
  if (c.qk_rms_norm_cross) throw Error("q/k RMS norm in cross-attention is not implemented", where, fix);
  if (c.share_mod) throw Error("shared adaLN modulation (adaLN_modulation.1) is not implemented", where, fix);
  return c;
}

MemoryTensors synth_ss_flow_stage(const formats::SsFlowConfig& config, uint64_t seed) {
  return encode_stage_tensors(formats::synth_ss_flow_weights(config, seed), formats::ss_flow_tensor_shapes(config));
}

}  // namespace ember::trellis
