// LFM2's chat template, built in (the facts of LiquidAI's chat_template.jinja):
//   <|startoftext|>
//   [<|im_start|>system\n{system prompt}[\nList of tools: <|tool_list_start|>[t1, t2]<|tool_list_end|>]<|im_end|>\n]
//   for each other message: <|im_start|>{role}\n{content}<|im_end|>\n
//     (a "tool" message's content is wrapped in <|tool_response_start|>...<|tool_response_end|>)
//   <|im_start|>assistant\n   when add_generation_prompt
// Only a first message with role "system" is the system prompt; an empty one is left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ember::llm {

struct ChatMessage {
  std::string role;  // system | user | assistant | tool
  std::string content;
};

// `tools`: each tool's JSON text, joined into the system prompt as the template does.
std::string render_lfm2_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                             const std::vector<std::string>& tools = {});

// Renders and encodes (no post-processor: the template writes <|startoftext|> itself). Throws
// ember::Error when the tokenizer lacks one of LFM2's special tokens.
std::vector<uint32_t> encode_lfm2_chat(const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages,
                                       bool add_generation_prompt, const std::vector<std::string>& tools = {});

}  // namespace ember::llm
