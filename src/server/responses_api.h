// OpenAI's Responses API (POST /v1/responses) for text in and text out, the API newer OpenAI
// clients and coding agents call:
//   request:  input (a string, or message items with input_text / output_text parts),
//             instructions, max_output_tokens, temperature, top_p, stream, model, and fields with
//             nothing to do here (metadata, user, store, ...). A known field ember cannot honour
//             (tools, previous_response_id, reasoning effort, non-text formats, image parts, ...)
//             is a 400 "unsupported_parameter" naming it; an unknown one "unknown_parameter".
//   response: {id "resp_...", object "response", status completed | incomplete (max_output_tokens)
//             | failed, output: [one assistant message with one output_text part], usage
//             {input_tokens, output_tokens, total_tokens, ...}, and the request's settings}.
//   stream:   server-sent events "event: TYPE\ndata: {type, sequence_number, ...}": created,
//             in_progress, output_item.added, content_part.added, output_text.delta...,
//             output_text.done, content_part.done, output_item.done, then completed (or
//             incomplete / failed). No [DONE].
// Nothing is stored: a response cannot be fetched or continued later.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llm/session.h"
#include "server/http_listener.h"
#include "server/request_parse.h"
#include "server/scheduler.h"

namespace ember::server {

struct ResponsesRequest {
  ParsedRequest parsed;  // the generation (prompt through LFM2's chat template), stream
  nlohmann::json instructions = nullptr, max_output_tokens = nullptr, metadata = nlohmann::json::object(), user = nullptr;
  double temperature = 1, top_p = 1;
};

// Throws ApiError (400) naming the field.
ResponsesRequest parse_responses_request(const std::string& body, const llm::Tokenizer& tokenizer, const ParseLimits& limits);

// The response object and the stream's events of one request.
class ResponseWriter {
 public:
  ResponseWriter(const ResponsesRequest& request, const std::string& model);
  const std::string& message_id() const { return message_id_; }
  // status "in_progress" (no usage yet), or the final one from `finish`.
  nlohmann::json response(const std::string& text, std::optional<Finish> finish, uint32_t input_tokens, uint32_t output_tokens,
                          const std::string& error = "") const;
  nlohmann::json message(const std::string& text, const char* status) const;
  // "event: TYPE\ndata: {...}\n\n" with type and the next sequence_number added to `fields`.
  std::string event(const std::string& type, nlohmann::json fields);

 private:
  const ResponsesRequest& request_;
  std::string model_, id_, message_id_;
  int64_t created_ = 0;
  uint64_t sequence_ = 0;
};

// POST /v1/responses, plain or streamed, through the scheduler.
void serve_responses(const HttpRequest& req, HttpResponder& res, llm::Session& session, Scheduler& scheduler, const ParseLimits& limits,
                     const std::string& model_name);

}  // namespace ember::server
