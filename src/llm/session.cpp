#include "llm/session.h"

#include <cstdio>

#include "common/error.h"

namespace ember::llm {

Session::Session(const std::filesystem::path& model_dir, const SessionOptions& options) {
  pack_ = std::make_unique<formats::LlmPack>(formats::LlmPack::open(model_dir));
  tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_file(pack_->tokenizer_path().string()));
  const uint64_t vocab = static_cast<uint64_t>(pack_->shape().vocab);
  if (tokenizer_->vocab_size() > vocab)
    throw Error("the tokenizer has " + std::to_string(tokenizer_->vocab_size()) + " tokens but the model's vocabulary is " +
                    std::to_string(vocab),
                pack_->tokenizer_path().string(), "use the tokenizer.json of the checkpoint the pack was made from");
  for (const char* s : {"<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>", "<|end_of_text|>"})
    if (auto id = tokenizer_->token_to_id(s)) stop_ids_.push_back(*id);

  device_ = std::make_unique<gpu::Device>(gpu::Device::open(options.device));
  kernels_ = std::make_unique<gpu::KernelCache>(*device_);
  ModelOptions mo = options.model;
  if (options.sequences > 1 && !mo.caches) {
    mo.caches = Lfm2Model::make_caches(*device_, *pack_, options.sequences);
    mo.cache_slot = 0;
  }
  model_ = std::make_unique<Lfm2Model>(*device_, *kernels_, *pack_, mo);
  if (!options.model.quiet)
    for (const auto& w : model_->choices().warnings) std::fprintf(stderr, "ember: warning: %s\n", w.c_str());
  generator_ = std::make_unique<Generator>(*model_, static_cast<uint32_t>(tokenizer_->vocab_size()));
}

Session::~Session() = default;

}  // namespace ember::llm
