// tokenizer_config.json's "chat_template", rendered by ember's Jinja interpreter (chat/jinja).
//
//   auto t = ember::llm::HfChatTemplate::from_config_file("model/tokenizer_config.json");
//   std::string prompt = t.render(messages_json, /*add_generation_prompt=*/true);
//
// The context is what transformers' apply_chat_template passes: `messages`,
// `add_generation_prompt` and the config's special tokens (every "*_token" key: a string or an
// AddedToken object's "content"), plus any `extra` variables (e.g. "tools").
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/jinja/template.h"

namespace ember::llm {

class HfChatTemplate {
 public:
  // Throws ember::Error when the file has no chat_template or the template does not parse.
  static HfChatTemplate from_config_file(const std::string& path);
  static HfChatTemplate from_config_json(const nlohmann::json& config, const std::string& origin);
  // A model directory: chat_template.jinja if present, else tokenizer_config.json's template.
  // Returns false when the directory has neither (the caller falls back to LFM2's built-in).
  static bool find_in_model_dir(const std::string& dir, std::unique_ptr<HfChatTemplate>& out);
  // Template text and the special tokens it sees (bos_token, ...); `origin` names it in errors.
  static HfChatTemplate from_source(const std::string& source, const nlohmann::json& tokens, const std::string& origin);

  std::string render(const nlohmann::json& messages, bool add_generation_prompt,
                     const nlohmann::json& extra = nlohmann::json::object()) const;
  // With the key order of messages and extra (e.g. tools) kept, as transformers passes Python dicts.
  std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt, const nlohmann::ordered_json& extra) const;
  const std::string& source() const { return source_; }

 private:
  HfChatTemplate(jinja::Template t, nlohmann::json tokens, std::string source)
      : template_(std::move(t)), tokens_(std::move(tokens)), source_(std::move(source)) {}
  jinja::Template template_;
  nlohmann::json tokens_;  // bos_token, eos_token, ...
  std::string source_;
};

}  // namespace ember::llm
