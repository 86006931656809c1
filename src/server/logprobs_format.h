// OpenAI's logprobs shapes (docs/structured-output.md). Chat: choices[].logprobs =
// {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}],
// "refusal": null}. Completions (legacy): {"tokens", "token_logprobs", "top_logprobs" (one
// {token: logprob} object per token), "text_offset" (byte offsets into the completion text)}.
// One writer per response: text offsets run on across streamed chunks.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/logprobs.h"
#include "tokenizer/tokenizer.h"

namespace ember::server {

class LogprobsWriter {
 public:
  LogprobsWriter(const llm::Tokenizer& tokenizer, bool chat) : tokenizer_(tokenizer), chat_(chat) {}
  nlohmann::json format(const std::vector<kernels::TopLogprobs>& entries);
  // Puts format(entries) into choices[choice].logprobs of a response or chunk (a chunk has one
  // choice, its index inside). One writer per choice: its text offsets are that choice's.
  void attach(nlohmann::json& response, const std::vector<kernels::TopLogprobs>& entries, size_t choice = 0) {
    response["choices"][choice]["logprobs"] = format(entries);
  }

 private:
  const llm::Tokenizer& tokenizer_;
  bool chat_;
  uint64_t offset_ = 0;  // completions: bytes of completion text before the next entry
};

}  // namespace ember::server
