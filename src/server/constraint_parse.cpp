#include "server/constraint_parse.h"

#include <cmath>
#include <map>

#include "common/error.h"
#include "kernels/logit_edit.h"
#include "kernels/logprobs.h"
#include "llm/grammar/gbnf.h"
#include "llm/grammar/json_schema.h"
#include "server/api_error.h"

namespace ember::server {
namespace {

using json = nlohmann::json;

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void bad(const std::string& message, const std::string& param, const std::string& code = "invalid_value") {
  throw ApiError::bad_request(message, param, code);
}

std::string response_format_grammar(const json& rf, const std::string& body) {
  if (!rf.is_object()) bad("'response_format' must be an object", "response_format", "invalid_type");
  const json* type = field(rf, "type");
  if (!type || !type->is_string()) bad("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"", "response_format.type");
  const std::string t = type->get<std::string>();
  for (auto it = rf.begin(); it != rf.end(); ++it)
    if (it.key() != "type" && !(t == "json_schema" && it.key() == "json_schema"))
      bad("unrecognized argument '" + it.key() + "' in 'response_format'", "response_format." + it.key(), "unknown_parameter");
  if (t == "text") return "";
  if (t == "json_object") return llm::grammar::json_object_gbnf();
  if (t != "json_schema") bad("'response_format.type' = \"" + t + "\" is not \"text\", \"json_object\" or \"json_schema\"", "response_format.type");
  const json* js = field(rf, "json_schema");
  if (!js) bad("'response_format.json_schema' is required with type json_schema", "response_format.json_schema", "missing_required_parameter");
  if (!js->is_object()) bad("'response_format.json_schema' must be an object", "response_format.json_schema", "invalid_type");
  for (auto it = js->begin(); it != js->end(); ++it)
    if (it.key() != "name" && it.key() != "schema" && it.key() != "strict" && it.key() != "description")
      bad("unrecognized argument '" + it.key() + "' in 'response_format.json_schema'", "response_format.json_schema." + it.key(),
          "unknown_parameter");
  const json* name = field(*js, "name");
  if (!name || !name->is_string() || name->get<std::string>().empty())
    bad("'response_format.json_schema.name' must be a non-empty string", "response_format.json_schema.name");
  if (const json* strict = field(*js, "strict"); strict && !strict->is_boolean())
    bad("'response_format.json_schema.strict' must be a boolean", "response_format.json_schema.strict", "invalid_type");
  // No schema: any JSON value, as OpenAI reads it.
  if (!field(*js, "schema")) return llm::grammar::json_value_gbnf();
  // The schema again, its key order kept: properties are generated in the order given.
  const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(body)["response_format"]["json_schema"]["schema"];
  try {
    return llm::grammar::json_schema_to_gbnf(schema);
  } catch (const llm::grammar::SchemaError& e) {
    bad(std::string("'response_format.json_schema.schema': ") + e.what(), "response_format.json_schema.schema", "unsupported_schema");
  }
}

}  // namespace

void check_grammar(const std::string& gbnf, const std::string& param) {
  try {
    llm::grammar::parse_gbnf(gbnf);
  } catch (const Error& e) {
    bad(std::string("'") + param + "' is not a valid grammar: " + e.what(), param, "invalid_grammar");
  }
}

void parse_constraint_fields(const json& obj, const std::string& body, const llm::Tokenizer& tokenizer, bool chat, JobRequest& job) {
  const json* rf = field(obj, "response_format");
  const json* grammar = field(obj, "grammar");
  if (rf && grammar) bad("give either 'response_format' or 'grammar', not both", "grammar");
  if (rf) job.grammar = response_format_grammar(*rf, body);
  if (grammar) {
    if (!grammar->is_string()) bad("'grammar' must be a string (GBNF)", "grammar", "invalid_type");
    job.grammar = grammar->get<std::string>();
  }
  if (!job.grammar.empty()) check_grammar(job.grammar, rf ? "response_format" : "grammar");

  if (const json* lb = field(obj, "logit_bias")) {
    if (!lb->is_object()) bad("'logit_bias' must be an object mapping token ids to biases", "logit_bias", "invalid_type");
    if (lb->size() > kernels::LogitEdit::kMaxBias)
      bad("'logit_bias' has " + std::to_string(lb->size()) + " entries; at most " + std::to_string(kernels::LogitEdit::kMaxBias), "logit_bias");
    std::map<uint32_t, float> biases;  // "01" and "1" are the same id: one entry
    for (auto it = lb->begin(); it != lb->end(); ++it) {
      const std::string& key = it.key();
      size_t used = 0;
      unsigned long long id = 0;
      try {
        id = std::stoull(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (key.empty() || used != key.size() || key[0] == '-' || key[0] == '+' || id >= tokenizer.vocab_size())
        bad("'logit_bias' key '" + key + "' is not a token id of this model (0.." + std::to_string(tokenizer.vocab_size() - 1) + ")",
            "logit_bias");
      if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < -100 || it->get<double>() > 100)
        bad("'logit_bias' value for token " + key + " must be a number in [-100, 100]", "logit_bias");
      biases[static_cast<uint32_t>(id)] = static_cast<float>(it->get<double>());
    }
    job.logit_bias.assign(biases.begin(), biases.end());
  }

  const uint32_t max_top = kernels::Logprobs::kMaxTop;
  if (chat) {
    if (const json* lp = field(obj, "logprobs")) {
      if (!lp->is_boolean()) bad("'logprobs' must be a boolean", "logprobs", "invalid_type");
      job.logprobs = lp->get<bool>();
    }
    if (const json* top = field(obj, "top_logprobs")) {
      if (!top->is_number_integer() || top->get<int64_t>() < 0 || top->get<int64_t>() > max_top)
        bad("'top_logprobs' must be an integer in [0, " + std::to_string(max_top) + "]", "top_logprobs");
      job.top_logprobs = static_cast<uint32_t>(top->get<int64_t>());
      if (job.top_logprobs > 0 && !job.logprobs) bad("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    }
  } else if (const json* lp = field(obj, "logprobs")) {
    if (!lp->is_number_integer() || lp->get<int64_t>() < 0 || lp->get<int64_t>() > max_top)
      bad("'logprobs' must be an integer in [0, " + std::to_string(max_top) + "] (alternatives per token)", "logprobs");
    job.logprobs = true;
    job.top_logprobs = static_cast<uint32_t>(lp->get<int64_t>());
  }
}

}  // namespace ember::server
