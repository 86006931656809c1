// The request fields of constrained decoding and logit edits (docs/structured-output.md), parsed
// into a JobRequest: response_format (text, json_object, json_schema), grammar (GBNF),
// logit_bias, and logprobs / top_logprobs (chat: a boolean and 0..20; completions: logprobs is
// the number 0..20 of alternatives). Problems are ApiError 400s naming the field.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "server/job.h"

namespace ember::server {

// `body` is the raw request (a json_schema's properties keep its order, which `obj` has lost).
void parse_constraint_fields(const nlohmann::json& obj, const std::string& body, const llm::Tokenizer& tokenizer, bool chat, JobRequest& job);

// Turns GBNF text into a 400 naming `param` when it does not parse (for fields that carry one).
void check_grammar(const std::string& gbnf, const std::string& param);

}  // namespace ember::server
