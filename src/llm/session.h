// Everything one loaded LLM needs, in the order it must be built and destroyed: the pack, the GPU
// device and kernels, the model, its tokenizer and a generator. What the CLI commands and the
// server share.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "formats/llm_pack.h"
#include "gpu/device.h"
#include "gpu/kernel.h"
#include "llm/generator.h"
#include "llm/lfm2_model.h"
#include "tokenizer/tokenizer.h"

namespace ember::llm {

struct SessionOptions {
  gpu::DeviceOptions device;
  ModelOptions model;
  // Sequences the caches have slots for: the model takes slot 0, sequences made from it (the
  // server's other slots, a batched decoder's rows) take 1.. (ModelOptions::caches).
  uint32_t sequences = 1;
};

class Session {
 public:
  // Opens and validates the pack, checks the tokenizer against the model's vocabulary, loads the
  // weights. Kernel-choice warnings (a candidate tuned elsewhere) go to stderr unless quiet.
  Session(const std::filesystem::path& model_dir, const SessionOptions& options);
  ~Session();

  formats::LlmPack& pack() { return *pack_; }
  gpu::Device& device() { return *device_; }
  Lfm2Model& model() { return *model_; }
  Generator& generator() { return *generator_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // Ids that end an assistant turn or a text (<|im_end|>, <|endoftext|>, ...), those the
  // tokenizer has.
  const std::vector<uint32_t>& stop_ids() const { return stop_ids_; }

 private:
  std::unique_ptr<formats::LlmPack> pack_;
  std::unique_ptr<gpu::Device> device_;
  std::unique_ptr<gpu::KernelCache> kernels_;
  std::unique_ptr<Lfm2Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Generator> generator_;
  std::vector<uint32_t> stop_ids_;
};

}  // namespace ember::llm
