// `ember dequant --model`: an LLM pack's weights back as a Hugging Face LFM2 checkpoint
// (config.json, model.safetensors in f32 under transformers' tensor names, tokenizer.json), so
// the weights ember runs can be loaded into transformers. The inverse of lfm2_packer: fused
// qkv and gate_up are split, the k-major down copy is transposed back, rope tables are dropped
// (transformers computes them from rope_theta).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/output_guard.h"
#include "formats/lfm2_checkpoint.h"
#include "formats/llm_pack.h"

namespace ember::formats {

struct Lfm2ExportReport {
  std::string down_copy;      // "quant" or "kquant": the copy written as feed_forward.w2
  size_t tensors = 0;
  uint64_t bytes = 0;         // of model.safetensors' tensor data
  double rope_theta = 0;      // written to config.json
  bool rope_estimated = false;  // the pack has no ropeTheta: estimated from its rope tables
  double rope_table_error = 0;  // max |pack's rope tables - tables from rope_theta|
};

// The config.json transformers needs to build this pack's model. The MLP width is written as
// is (block_auto_adjust_ff_dim false); max_position_embeddings is the pack's rope table length.
Lfm2Config lfm2_config_of(const LlmPack& pack, double rope_theta);

// Writes the checkpoint atomically under output_guard.h's rules (lfm2_checkpoint_output();
// the pack's directory is an input). `down_copy` "" means the candidate's (the copy ember runs).
Lfm2ExportReport export_lfm2_checkpoint(const LlmPack& pack, const OutputTarget& out,
                                        const std::string& down_copy = "");

}  // namespace ember::formats
