// A chat answer when tools are offered: the generated text split by ToolCallStream into content
// and OpenAI tool_calls, for the whole response and for streamed chunks.
//
//   message: {"role": "assistant", "content": text or null, "tool_calls": [{"id": "call_...",
//             "type": "function", "function": {"name": ..., "arguments": "<JSON text>"}}]}
//   stream:  a call is two deltas: {"tool_calls": [{"index", "id", "type", "function": {"name",
//            "arguments": ""}}]}, then {"tool_calls": [{"index", "function": {"arguments": ...}}]}
//   finish_reason: "tool_calls" when a call was parsed and generation stopped; a malformed call
//            comes back as content with the finish reason of the generation ("stop", or
//            "length" when max_tokens cut it).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/job.h"
#include "server/openai_format.h"
#include "server/tool_request.h"
#include "server/tool_stream.h"

namespace ember::server {

class ToolReply {
 public:
  ToolReply(const ToolRequest& request, const ResponseMeta& meta);

  // Streaming: the SSE events for newly generated text, and for the end of generation (before
  // the last chunk, whose finish_reason comes from finish_reason()).
  std::string stream(const std::string& text);
  std::string stream_end(Finish finish);
  // Whole response: turns full_response()'s message into one with tool_calls.
  void complete(nlohmann::json& response, const std::string& text, Finish finish);
  std::string finish_reason(Finish finish) const;

  const std::vector<nlohmann::json>& calls() const { return calls_; }

 private:
  nlohmann::json call_json(const ToolCall& call);
  std::string events(const std::vector<ToolCallStream::Event>& events);

  // The end of generation; a forced call's list ends with it (the grammar's end): close it.
  std::vector<ToolCallStream::Event> end(Finish finish);

  ResponseMeta meta_;
  bool forced_;
  ToolCallStream stream_;
  std::vector<nlohmann::json> calls_;  // OpenAI's form, in order
};

}  // namespace ember::server
