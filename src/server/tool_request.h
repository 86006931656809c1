// The tool fields of a chat request: `tools`, `tool_choice`, `parallel_tool_calls`, validated
// with a 400 naming the field (docs/tool-calling.md):
//   tools: [{"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}}]
//   tool_choice: "auto" (the default with tools) | "none" (the default without) | "required" |
//                {"type": "function", "function": {"name": ...}}
//   parallel_tool_calls: true (default) | false (at most one call)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"

namespace ember::server {

enum class ToolChoice { None, Auto, Required, Named };

struct ToolRequest {
  // Each tool's function object as the client wrote it, less "strict": what the chat template
  // lists ({"name", "description", "parameters"}, the form LFM2's model card shows).
  nlohmann::ordered_json functions = nlohmann::ordered_json::array();
  ToolChoice choice = ToolChoice::None;
  std::string forced;     // the function tool_choice names (Named)
  bool parallel = true;   // parallel_tool_calls

  // Tools are offered to the model (listed in the prompt) and its calls parsed.
  bool offered() const { return choice != ToolChoice::None && !functions.empty(); }
  // The output must be a call: constrained decoding forces it.
  bool forced_call() const { return choice == ToolChoice::Required || choice == ToolChoice::Named; }
};

// `body`: the request object, keys in the client's order. Throws ApiError (400).
ToolRequest parse_tool_request(const nlohmann::ordered_json& body);

// The ids of <|tool_call_start|> and <|tool_call_end|> where the tokenizer has them as special
// tokens: their text must reach the output (JobRequest::shown_special) for calls to be parsed.
std::vector<uint32_t> tool_marker_ids(const llm::Tokenizer& tokenizer);

}  // namespace ember::server
