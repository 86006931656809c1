// GBNF (llm/grammar/gbnf.h) for a forced tool call (tool_choice "required" or a named function):
// LFM2's call list, "[name(key=value, ...), ...]", over the offered functions (or the named one),
// one call when parallel_tool_calls is false. The markers are special tokens, which grammar
// output never contains: the server puts <|tool_call_start|> at the end of the prompt (as if the
// model had generated it) and the grammar's end is the end of generation.
//
// Arguments follow each function's JSON schema as Python literals: properties in the schema's
// order as keyword arguments, the required ones always, the others optionally; values by
// "enum"/"const" (those literals), "type" string (double-quoted, JSON escapes), integer (at most
// 16 digits), number, boolean (True/False), null (None), array ("items"), object ("properties":
// a dict with those keys; else any dict), a list of types, "anyOf"/"oneOf". A schema without
// these (or with $ref) takes any Python literal.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"
#include "server/job.h"
#include "server/tool_request.h"

namespace ember::server {

std::string tool_call_grammar(const ToolRequest& request);

// What the tool fields do to the job (its prompt already rendered): offered tools show the call
// markers in the output; a forced call appends <|tool_call_start|> to the prompt and sets the
// grammar; "none" with tools bans <|tool_call_start|> (logit bias -100).
void apply_tool_request(const ToolRequest& request, const llm::Tokenizer& tokenizer, JobRequest& job);

}  // namespace ember::server
