#include "server/chat_prompt.h"

#include "common/error.h"
#include "chat/lfm2_chat_template.h"

namespace ember::server {

ChatPrompt::ChatPrompt(llm::HfChatTemplate t, std::string origin, bool builtin)
    : template_(std::move(t)), origin_(std::move(origin)), builtin_(builtin) {
  renders_tool_calls_ = template_.source().find("tool_calls") != std::string::npos;
}

const ChatPrompt& ChatPrompt::lfm2() {
  static const ChatPrompt p(llm::HfChatTemplate::from_source(llm::lfm2_chat_template_source(), {{"bos_token", "<|startoftext|>"}},
                                                             "ember's LFM2 chat template"),
                            "ember's LFM2 chat template", true);
  return p;
}

std::shared_ptr<const ChatPrompt> ChatPrompt::for_model_dir(const std::string& dir) {
  std::unique_ptr<llm::HfChatTemplate> t;
  if (!llm::HfChatTemplate::find_in_model_dir(dir, t)) return std::shared_ptr<const ChatPrompt>(&lfm2(), [](const ChatPrompt*) {});
  return std::shared_ptr<const ChatPrompt>(new ChatPrompt(std::move(*t), "the chat template of " + dir, false));
}

std::string ChatPrompt::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools, bool add_generation_prompt) const {
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (tools.is_array() && !tools.empty()) extra["tools"] = tools;
  return template_.render(messages, add_generation_prompt, extra);
}

std::vector<uint32_t> ChatPrompt::encode(const llm::Tokenizer& tokenizer, const nlohmann::ordered_json& messages,
                                         const nlohmann::ordered_json& tools) const {
  if (builtin_)
    for (const char* name : {"<|startoftext|>", "<|im_start|>", "<|im_end|>"}) {
      auto id = tokenizer.token_to_id(name);
      if (!id || !tokenizer.is_special(*id))
        throw Error(std::string("tokenizer has no special token ") + name, "chat template",
                    "use an LFM2 tokenizer.json or one with LFM2's special tokens added");
    }
  return tokenizer.encode(render(messages, tools, true), false);
}

}  // namespace ember::server
