// Parsing and validation of the JSON bodies of /v1/chat/completions and /v1/completions into a
// JobRequest. Every problem is an ApiError (400) naming the field (`param`) as OpenAI does.
//
// Field policy (docs in README text of the server issue):
// - Unknown fields are refused (400, code "unknown_parameter", the field named), like OpenAI's
//   "Unrecognized request argument". Known OpenAI fields ember does not implement are accepted
//   only with their neutral value (best_of = 1, echo false, ...). response_format, grammar,
//   logit_bias and logprobs are constraint_parse.h's.
// - null means "not given" for every optional field.
// - presence_penalty / frequency_penalty (each in [-2, 2]) have no exact counterpart in the GPU
//   sampler; when repetition_penalty is not given they map to a multiplicative repetition
//   penalty of clamp(1 + (presence + frequency) / 2, 0.5, 2) over the last 64 tokens.
// - Sampling defaults are OpenAI's: temperature 1, top_p 1, no top_k (the sampler's 64-candidate
//   bound applies), min_p 0; seed random unless given.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "server/chat_prompt.h"
#include "server/job.h"
#include "server/tool_request.h"

namespace ember::server {

struct ParseLimits {
  uint32_t capacity = 0;             // positions per sequence: prompt + generated
  uint32_t default_max_tokens = 256;
  uint32_t max_tokens_cap = 0;       // larger max_tokens are lowered to this (0 = no cap but the context)
  uint32_t max_json_depth = 64;      // deeper nesting is refused before parsing (stack safety)
};

struct ParsedRequest {
  JobRequest job;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  uint32_t n = 1;              // choices (Scheduler::submit)
  std::string model;           // as the client named it ("" when not given)
  ToolRequest tools;           // tools, tool_choice, parallel_tool_calls (chat)
};

// `prompt`: the model's chat template (null: ember's LFM2 template).
ParsedRequest parse_chat_request(const std::string& body, const llm::Tokenizer& tokenizer, const ParseLimits& limits,
                                 const ChatPrompt* prompt = nullptr);
ParsedRequest parse_completion_request(const std::string& body, const llm::Tokenizer& tokenizer, const ParseLimits& limits);

// Throws ApiError when `body` is not one JSON object nested at most `max_depth` deep.
nlohmann::json parse_json_object(const std::string& body, uint32_t max_depth);

}  // namespace ember::server
