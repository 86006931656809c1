// OpenAI chat `messages` checked (a 400 naming messages[i].field) and turned into the messages a
// chat template reads: {"role", "content"} with content a string (text parts joined), "developer"
// read as "system", plus:
//   - assistant turns with `tool_calls` ({id, type: "function", function: {name, arguments: JSON
//     text}}): content may be null. When the template renders tool_calls itself they are passed
//     on with arguments as objects (as transformers expects); otherwise (LFM2's own template) the
//     calls are written into the content the way LFM2 generates them,
//     "<|tool_call_start|>[name(key=value)]<|tool_call_end|>" before any text.
//   - tool turns: `tool_call_id` (a string, required) and the result as content.
#pragma once

#include <nlohmann/json.hpp>

namespace ember::server {

nlohmann::ordered_json parse_chat_messages(const nlohmann::ordered_json& messages, bool template_renders_tool_calls);

}  // namespace ember::server
