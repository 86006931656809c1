// Random-weight LFM2 checkpoints in Hugging Face's own format (config.json, model.safetensors,
// tokenizer.json, tokenizer_config.json), so tests and demos go through the real converter.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/output_guard.h"
#include "formats/lfm2_checkpoint.h"

namespace ember::formats {

struct Lfm2SynthOptions {
  uint64_t seed = 0;
  bool bf16 = false;                // tensors as BF16 (else F32)
  std::filesystem::path tokenizer;  // copy this tokenizer.json; empty: write the byte-level one
};

// Writes HF_DIR atomically. Weights: matrices N(0, 0.8/sqrt(fan_in)), embeddings N(0, 0.05),
// norms 1 + 0.1 N(0,1), conv taps N(0, 0.3); each tensor from its own stream seeded by
// (seed, tensor name), so the values do not depend on the order or threading.
void synth_lfm2_checkpoint(const Lfm2Config& config, const OutputTarget& out, const Lfm2SynthOptions& opts);

// A Hugging Face LFM2 directory ember wrote (synth lfm2, dequant --model) as an output: --force
// may replace one holding only config.json, model.safetensors marked "ember_output":
// "lfm2-checkpoint" and tokenizer files.
OutputKind lfm2_checkpoint_output();
inline constexpr const char* kLfm2CheckpointId = "lfm2-checkpoint";

// A small byte-level BPE tokenizer.json (256 byte tokens, a few merges, the LFM2 chat specials
// <|pad|> 0, <|startoftext|> 1, <|endoftext|> 2, <|im_start|> 3, <|im_end|> 4, and after the
// merges LFM2's six tool markers <|tool_list_start|> ... <|tool_response_end|>).
std::string byte_level_tokenizer_json();

// The checkpoint's tokenizer_config.json: LFM2's special token names and ember's text of LFM2's
// chat template (chat/lfm2_chat_template.h), which tool calling renders through.
std::string lfm2_tokenizer_config_json();

}  // namespace ember::formats
