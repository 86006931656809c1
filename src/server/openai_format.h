// OpenAI's response shapes: chat.completion, text_completion, their streaming chunks
// (chat.completion.chunk / text_completion) and the server-sent-event framing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/job.h"

namespace ember::server {

struct ResponseMeta {
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;
  std::string model;
  bool chat = true;
};

struct Usage {
  uint32_t prompt_tokens = 0, completion_tokens = 0;  // completion: over all choices; the prompt once
  uint32_t cached_tokens = 0;  // prompt_tokens_details.cached_tokens: prompt positions a slot's caches gave
};

struct Choice {
  std::string text;
  Finish finish = Finish::None;
};

ResponseMeta new_meta(bool chat, const std::string& model);  // a fresh id, the time now

nlohmann::json full_response(const ResponseMeta& meta, const std::string& text, Finish finish, const Usage& usage);
nlohmann::json full_response(const ResponseMeta& meta, const std::vector<Choice>& choices, const Usage& usage);  // choices[i]: index i
// One streamed delta of choice `index`. Chat: the first chunk carries the role; the last one
// `finish` and an empty delta.
nlohmann::json stream_chunk(const ResponseMeta& meta, const std::string& text, std::optional<Finish> finish, bool with_role,
                            uint32_t index = 0);
// The extra last chunk of stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseMeta& meta, const Usage& usage);

std::string dump(const nlohmann::json& j);               // invalid UTF-8 replaced, never throws
std::string sse_event(const nlohmann::json& j);          // "data: {...}\n\n"
inline const char* kSseDone = "data: [DONE]\n\n";

}  // namespace ember::server
