#include "chat/chat_template.h"

#include "common/error.h"

namespace ember::llm {

std::string render_lfm2_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                             const std::vector<std::string>& tools) {
  std::string out = "<|startoftext|>";
  size_t first = 0;
  std::string system;
  if (!messages.empty() && messages[0].role == "system") {
    system = messages[0].content;
    first = 1;
  }
  if (!tools.empty()) {
    if (!system.empty()) system += "\n";
    system += "List of tools: <|tool_list_start|>[";
    for (size_t i = 0; i < tools.size(); i++) system += (i ? ", " : "") + tools[i];
    system += "]<|tool_list_end|>";
  }
  if (!system.empty()) out += "<|im_start|>system\n" + system + "<|im_end|>\n";
  for (size_t i = first; i < messages.size(); i++) {
    const auto& m = messages[i];
    out += "<|im_start|>" + m.role + "\n";
    if (m.role == "tool") out += "<|tool_response_start|>" + m.content + "<|tool_response_end|>";
    else out += m.content;
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::vector<uint32_t> encode_lfm2_chat(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                       bool add_generation_prompt, const std::vector<std::string>& tools) {
  for (const char* name : {"<|startoftext|>", "<|im_start|>", "<|im_end|>"}) {
    auto id = tokenizer.token_to_id(name);
    if (!id || !tokenizer.is_special(*id))
      throw Error(std::string("tokenizer has no special token ") + name, "chat template",
                  "use an LFM2 tokenizer.json or one with LFM2's special tokens added");
  }
  return tokenizer.encode(render_lfm2_chat(messages, add_generation_prompt, tools), false);
}

}  // namespace ember::llm
