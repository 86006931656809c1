// Hugging Face CLIP checkpoints for the text encoder stage: reading one (config.json,
// model.safetensors, tokenizer.json) and packing it as a `textEncoder` stage; writing a
// random-weight one (`ember synth clip-text`) with a small CLIP-style tokenizer.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/clip_text_config.h"
#include "formats/safetensors.h"
#include "formats/trellis_packer.h"

namespace ember::trellis {

inline constexpr const char* kTextEncoderStage = "textEncoder";
inline constexpr const char* kTokenizerFile = "tokenizer.json";
inline constexpr const char* kConfigFile = "config.json";

struct ClipCheckpoint {
  std::filesystem::path dir;
  formats::ClipTextConfig config;
  formats::SafetensorsFile weights;
  std::string tokenizer_json;
  std::vector<std::string> ignored;  // tensors of the checkpoint that are not the text model's
};

// Reads DIR/config.json (a CLIPTextConfig or CLIPConfig), DIR/model.safetensors (F32, F16 or
// BF16; a full CLIPModel's vision tensors are listed in `ignored`) and DIR/tokenizer.json (parsed
// and checked to hold <|startoftext|> and <|endoftext|> inside the vocabulary). Every tensor
// CLIPTextModel needs must be there with its shape. Throws ember::Error naming the file, tensor
// or field.
ClipCheckpoint open_clip_checkpoint(const std::filesystem::path& dir);

// The stage pack: tensors under CLIPTextModel's names (int8 / raw f16 by the seed's rule), plus
// config.json (the text config) and tokenizer.json as side files. Atomic, like write_stage_pack.
std::vector<formats::TensorPackReport> pack_clip_text_stage(const ClipCheckpoint& ckpt, const OutputTarget& out,
                                                            formats::StagePackOptions options);

// A small CLIP-style tokenizer.json (openai/clip-vit-large-patch14's pipeline: NFC + whitespace
// Replace + Lowercase normalizer, the CLIP Split and ByteLevel pre-tokenizers, BPE with "</w>",
// RobertaProcessing): the 512 byte tokens, merges spelling a fixed list of common words, and
// <|startoftext|> / <|endoftext|> at the config's bos / eos ids.
std::string synth_clip_tokenizer_json(const formats::ClipTextConfig& c);

// Writes DIR/config.json, DIR/model.safetensors (F32 or F16) and DIR/tokenizer.json atomically
// (DIR must not exist).
void write_synth_clip_checkpoint(const std::filesystem::path& dir, const formats::ClipTextConfig& c, uint64_t seed, bool f16);

}  // namespace ember::trellis
