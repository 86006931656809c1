// An LLM runtime pack on disk: runtime.json + weights.bin (memory-mapped) + tokenizer.json,
// validated against the layout its shape implies before anything uses it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/llm_layout.h"
#include "formats/llm_runtime.h"
#include "formats/problems.h"

namespace ember::formats {

// What a validator found; never throws for problems in the pack (they are all in `problems`).
struct LlmPackCheck {
  std::filesystem::path dir;
  bool parsed = false;  // runtime.json was readable JSON
  OrderedJson json;     // runtime.json as read
  RuntimeFile file;     // typed view (partially filled when there are problems)
  LlmLayout expected;   // the table the shape implies (empty when the shape itself is invalid)
  uint64_t weights_file_bytes = 0;
  Problems problems;
  bool ok() const { return parsed && problems.empty(); }
};

LlmPackCheck check_llm_pack(const std::filesystem::path& dir);
// The content check `ember inspect` adds (it reads every float of the pack, so loading skips
// it): a NaN or Inf in an f32 section (norms, scales, rope tables) is a problem naming the
// section and the element. Only for a check that is ok() so far.
void check_llm_pack_values(LlmPackCheck& check);

class LlmPack {
 public:
  // Validates (every problem in one ember::Error) and maps weights.bin.
  static LlmPack open(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const RuntimeFile& file() const { return file_; }
  const Runtime& runtime() const { return file_.runtime; }
  const LlmShape& shape() const { return file_.runtime.shape; }
  const Candidate& candidate() const { return file_.candidate; }
  // These weights under another runtime.json's kernel choices (what ember tune compares): `file`
  // must describe the same weights (shape and sections), or an ember::Error says it does not.
  LlmPack with_file(RuntimeFile file) const;
  const OrderedJson& json() const { return json_; }  // raw runtime.json
  const LlmLayout& layout() const { return layout_; }
  const std::vector<std::string>& unknown_keys() const { return file_.unknown_keys; }
  std::filesystem::path tokenizer_path() const { return dir_ / "tokenizer.json"; }

  bool has_section(const std::string& name) const;
  // The bytes of a section of weights.bin (an ember::Error naming the pack if there is none).
  std::span<const uint8_t> section(const std::string& name) const;
  // An f32 section (norms, taps, rope tables) as floats; offsets are 256-aligned.
  std::span<const float> f32_section(const std::string& name) const;
  std::span<const uint8_t> weights() const { return {data_, file_.runtime.weight_bytes}; }

  // A 4-bit matrix ("L3.conv.in_proj", "L0.mlp.down", "head") dequantized to f32 [rows][cols].
  // For mlp.down the copy is the candidate's (kquant when mlpPair, else quant) unless
  // `down_copy` says "quant" or "kquant".
  std::vector<float> dequantize(const std::string& matrix, const std::string& down_copy = "") const;

 private:
  std::filesystem::path dir_;
  RuntimeFile file_;
  OrderedJson json_;
  LlmLayout layout_;
  std::shared_ptr<const void> mapping_;
  const uint8_t* data_ = nullptr;
};

}  // namespace ember::formats
