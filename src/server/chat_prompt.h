// How the server turns a chat into prompt ids: the pack's chat template (chat_template.jinja,
// else tokenizer_config.json's "chat_template"), else ember's text of LFM2's template; rendered
// as transformers' apply_chat_template renders it, with `tools` in the context when tools are
// offered, then encoded without added special tokens (the template writes <|startoftext|>).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/hf_chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ember::server {

class ChatPrompt {
 public:
  // Throws ember::Error when the pack's template does not parse.
  static std::shared_ptr<const ChatPrompt> for_model_dir(const std::string& dir);
  static const ChatPrompt& lfm2();  // ember's LFM2 template

  // `messages`: parse_chat_messages' output; `tools`: the function objects, or empty.
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools, bool add_generation_prompt) const;
  // Throws ember::Error when the template fails or (LFM2's template) the tokenizer lacks LFM2's
  // chat tokens.
  std::vector<uint32_t> encode(const llm::Tokenizer& tokenizer, const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools) const;

  // The template reads an assistant message's tool_calls itself (LFM2's does not: the server
  // writes the calls into the content as LFM2 generates them).
  bool renders_tool_calls() const { return renders_tool_calls_; }
  const std::string& origin() const { return origin_; }

 private:
  ChatPrompt(llm::HfChatTemplate t, std::string origin, bool builtin);
  llm::HfChatTemplate template_;
  std::string origin_;
  bool builtin_ = false, renders_tool_calls_ = false;
};

}  // namespace ember::server
