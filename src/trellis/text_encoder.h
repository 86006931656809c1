// The CLIP text encoder stage (stage "textEncoder") on the GPU: prompts -> last_hidden_state, the
// text context TRELLIS-text conditions its flow models on (docs/trellis-text-encoder.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "formats/clip_text_config.h"
#include "gpu/device.h"
#include "gpu/kernel.h"

namespace ember::gpu {
class Profiler;
}
namespace ember::llm {
class Tokenizer;
}

namespace ember::trellis {

class TensorSource;

// CLIP token ids of each prompt as TRELLIS's tokenizer call gives them (max_length, padding to
// max_length, truncation): <|startoftext|> ... <|endoftext|>, the text's ids cut so that both fit,
// then the pad token (the file's padding.pad_id, else <|endoftext|>). `truncated` (optional) gets
// one flag per prompt.
std::vector<std::vector<int32_t>> clip_tokenize(const llm::Tokenizer& tokenizer, const std::vector<std::string>& prompts,
                                                int context_length, std::vector<bool>* truncated = nullptr);

class TextEncoder {
 public:
  // Opens and sha256-checks the stage at `stage_dir` (manifest.json + shards + tokenizer.json);
  // throws ember::Error naming the file, tensor or field on bad input. The Device& form keeps a
  // kernel cache of its own; the KernelCache& form shares the caller's (e.g. the ss-flow model's).
  TextEncoder(gpu::Device& device, const std::filesystem::path& stage_dir);
  TextEncoder(gpu::KernelCache& kernels, const std::filesystem::path& stage_dir);
  // Tensors from any source in pack encoding (e.g. synthetic weights in memory), with the text
  // config and the tokenizer.json text.
  TextEncoder(gpu::KernelCache& kernels, std::unique_ptr<TensorSource> tensors, const formats::ClipTextConfig& config,
              const std::string& tokenizer_json);
  ~TextEncoder();
  TextEncoder(TextEncoder&&) noexcept;
  TextEncoder& operator=(TextEncoder&&) noexcept;

  int context_length() const;  // 77
  int width() const;           // 768 for ViT-L/14
  const formats::ClipTextConfig& config() const;
  const llm::Tokenizer& tokenizer() const;

  // CLIP token ids of each prompt: <|startoftext|> ... <|endoftext|>, truncated to
  // context_length() and padded to it with the pad token, as TRELLIS's tokenizer call does.
  // `truncated` (optional) gets one flag per prompt.
  std::vector<std::vector<int32_t>> tokenize(const std::vector<std::string>& prompts,
                                             std::vector<bool>* truncated = nullptr) const;
  // last_hidden_state: [ids.size(), context_length(), width()] f32, row-major. Each row of `ids`
  // must hold context_length() ids below the vocabulary size (ember::Error otherwise).
  // With a profiler, each dispatch is timed under its module path.
  std::vector<float> encode_ids(const std::vector<std::vector<int32_t>>& ids, gpu::Profiler* profiler = nullptr);
  std::vector<float> encode(const std::vector<std::string>& prompts);

  // Floating-point operations of one encode of `batch` prompts (linear layers and attention).
  double flops(int batch) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::trellis
