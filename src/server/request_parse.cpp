#include "server/request_parse.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "common/error.h"
#include "server/api_error.h"
#include "server/chat_messages.h"
#include "server/constraint_parse.h"
#include "server/tool_grammar.h"

namespace ember::server {
namespace {

using json = nlohmann::json;

std::string type_name(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

[[noreturn]] void wrong_type(const std::string& field, const std::string& want, const json& got) {
  throw ApiError::bad_request("'" + field + "' must be " + want + ", got " + type_name(got), field, "invalid_type");
}

// Optional typed fields: nullopt when absent or null.
const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> number(const json& obj, const char* name, double lo, double hi) {
  const json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    throw ApiError::bad_request("'" + std::string(name) + "' = " + v->dump() + " is out of range [" + json(lo).dump() + ", " +
                                    json(hi).dump() + "]",
                                name);
  return d;
}

std::optional<int64_t> integer(const json& obj, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) wrong_type(name, "an integer", *v);
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX))
    throw ApiError::bad_request("'" + std::string(name) + "' is too large", name);
  const int64_t i = v->get<int64_t>();
  if (i < lo || i > hi)
    throw ApiError::bad_request("'" + std::string(name) + "' = " + std::to_string(i) + " is out of range [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "]",
                                name);
  return i;
}

std::optional<bool> boolean(const json& obj, const char* name) {
  const json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

void refuse_unknown(const json& obj, const std::set<std::string>& known, const std::string& where) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!known.count(it.key()))
      throw ApiError::bad_request("unrecognized request argument supplied: '" + it.key() + "'" + where, it.key(), "unknown_parameter");
}

// Known OpenAI fields ember does not implement: only their neutral value is accepted.
void require_neutral(const json& obj) {
  auto unsupported = [](const std::string& name, const std::string& what) {
    throw ApiError::bad_request("'" + name + "' " + what + " is not supported by this server", name, "unsupported_parameter");
  };
  if (auto n = integer(obj, "best_of", 1, 128); n && *n != 1) unsupported("best_of", "other than 1");
  if (auto e = boolean(obj, "echo"); e && *e) unsupported("echo", "true");
  if (const json* v = field(obj, "suffix"); v && !(v->is_string() && v->get<std::string>().empty())) unsupported("suffix", "");
}

std::vector<std::string> stop_strings(const json& obj) {
  const json* v = field(obj, "stop");
  if (!v) return {};
  std::vector<std::string> out;
  if (v->is_string()) out.push_back(v->get<std::string>());
  else if (v->is_array()) {
    if (v->size() > 4) throw ApiError::bad_request("'stop' takes at most 4 strings, got " + std::to_string(v->size()), "stop");
    for (const auto& s : *v) {
      if (!s.is_string()) wrong_type("stop", "a string or an array of strings", s);
      out.push_back(s.get<std::string>());
    }
  } else wrong_type("stop", "a string or an array of strings", *v);
  for (const auto& s : out)
    if (s.empty()) throw ApiError::bad_request("'stop' strings must not be empty", "stop");
  return out;
}

// Everything both endpoints share: sampling, limits, stream, model.
void common_fields(const json& obj, ParsedRequest& r, const ParseLimits& limits) {
  require_neutral(obj);
  if (const json* m = field(obj, "model")) {
    if (!m->is_string()) wrong_type("model", "a string", *m);
    r.model = m->get<std::string>();
  }
  r.stream = boolean(obj, "stream").value_or(false);
  r.n = static_cast<uint32_t>(integer(obj, "n", 1, 128).value_or(1));  // the scheduler bounds it by its slots
  if (const json* so = field(obj, "stream_options")) {
    if (!so->is_object()) wrong_type("stream_options", "an object", *so);
    refuse_unknown(*so, {"include_usage"}, " in 'stream_options'");
    r.include_usage = boolean(*so, "include_usage").value_or(false);
  }
  auto& s = r.job.sampling;
  s.temperature = static_cast<float>(number(obj, "temperature", 0, 2).value_or(1.0));
  s.top_p = static_cast<float>(number(obj, "top_p", 0, 1).value_or(1.0));
  if (s.top_p <= 0) throw ApiError::bad_request("'top_p' must be > 0", "top_p");
  s.top_k = static_cast<uint32_t>(integer(obj, "top_k", 0, llm::SamplingOptions::kMaxTopK).value_or(0));
  s.min_p = static_cast<float>(number(obj, "min_p", 0, 0.999).value_or(0.0));
  const double presence = number(obj, "presence_penalty", -2, 2).value_or(0);
  const double frequency = number(obj, "frequency_penalty", -2, 2).value_or(0);
  if (auto rp = number(obj, "repetition_penalty", 0.01, 10)) s.repeat_penalty = static_cast<float>(*rp);
  else s.repeat_penalty = static_cast<float>(std::clamp(1.0 + (presence + frequency) / 2, 0.5, 2.0));
  s.repeat_last_n = 64;
  // -1 asks for a random seed, as llama.cpp's server does.
  if (auto seed = integer(obj, "seed", INT64_MIN, INT64_MAX); seed && *seed != -1) s.seed = static_cast<uint64_t>(*seed);
  else s.seed = (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  // max_completion_tokens is the newer name of max_tokens.
  auto mt = integer(obj, "max_completion_tokens", 1, INT32_MAX);
  if (!mt) mt = integer(obj, "max_tokens", 1, INT32_MAX);
  r.job.max_tokens = static_cast<uint32_t>(mt.value_or(limits.default_max_tokens));
  if (limits.max_tokens_cap) r.job.max_tokens = std::min(r.job.max_tokens, limits.max_tokens_cap);
  r.job.stops = stop_strings(obj);
  try {
    s.validate("");
  } catch (const Error& e) {
    throw ApiError::bad_request(e.what(), "temperature");
  }
}

void check_prompt_length(const ParsedRequest& r, const ParseLimits& limits, const std::string& param) {
  if (r.job.prompt.empty()) throw ApiError::bad_request("the prompt is empty", param);
  if (r.job.prompt.size() >= limits.capacity)
    throw ApiError::bad_request("the prompt has " + std::to_string(r.job.prompt.size()) + " tokens but this model's context holds " +
                                    std::to_string(limits.capacity) + " (prompt and completion together); shorten it",
                                param, "context_length_exceeded");
}

const std::set<std::string> kCommon = {"model", "temperature", "top_p", "top_k", "min_p", "max_tokens", "stop", "seed",
                                       "presence_penalty", "frequency_penalty", "repetition_penalty", "n", "stream",
                                       "stream_options", "user", "logprobs", "logit_bias", "metadata", "store", "service_tier",
                                       "grammar", "response_format"};

}  // namespace

json parse_json_object(const std::string& body, uint32_t max_depth) {
  // nlohmann's parser recurses once per level: bound the depth first (outside strings).
  uint32_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw ApiError::bad_request("the JSON body nests deeper than " + std::to_string(max_depth) + " levels", "body", "invalid_json");
    } else if ((c == ']' || c == '}') && depth > 0) depth--;
  }
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {  // parse errors, and numbers out of range (1e999)
    throw ApiError(400, std::string("the body is not valid JSON: ") + e.what(), "invalid_request_error", std::nullopt, "invalid_json");
  }
  if (!j.is_object()) throw ApiError(400, "the body must be a JSON object, got " + type_name(j), "invalid_request_error", std::nullopt, "invalid_json");
  return j;
}

ParsedRequest parse_chat_request(const std::string& body, const llm::Tokenizer& tokenizer, const ParseLimits& limits, const ChatPrompt* prompt) {
  json obj = parse_json_object(body, limits.max_json_depth);
  std::set<std::string> known = kCommon;
  known.insert({"messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice", "parallel_tool_calls"});
  refuse_unknown(obj, known, "");
  ParsedRequest r;
  const json* msgs = field(obj, "messages");
  if (!msgs) throw ApiError::bad_request("'messages' is required", "messages", "missing_required_parameter");
  if (!msgs->is_array()) wrong_type("messages", "an array", *msgs);
  if (msgs->empty()) throw ApiError::bad_request("'messages' must not be empty", "messages", "empty_array");
  // Key order matters to the template (tools and arguments are listed as the client wrote them).
  const auto ordered = nlohmann::ordered_json::parse(body);
  const ChatPrompt& chat = prompt ? *prompt : ChatPrompt::lfm2();
  const auto messages = parse_chat_messages(ordered["messages"], chat.renders_tool_calls());
  r.tools = parse_tool_request(ordered);
  common_fields(obj, r, limits);
  parse_constraint_fields(obj, body, tokenizer, /*chat=*/true, r.job);
  r.job.prompt = chat.encode(tokenizer, messages, r.tools.offered() ? r.tools.functions : nlohmann::ordered_json::array());
  if (r.tools.forced_call() && !r.job.grammar.empty())
    throw ApiError::bad_request("'tool_choice' " + std::string(r.tools.choice == ToolChoice::Required ? "\"required\"" : "naming a function") +
                                    " forces a call and cannot be combined with 'response_format' or 'grammar'",
                                "tool_choice");
  apply_tool_request(r.tools, tokenizer, r.job);
  check_prompt_length(r, limits, "messages");
  return r;
}

ParsedRequest parse_completion_request(const std::string& body, const llm::Tokenizer& tokenizer, const ParseLimits& limits) {
  json obj = parse_json_object(body, limits.max_json_depth);
  std::set<std::string> known = kCommon;
  known.insert({"prompt", "echo", "best_of", "suffix"});
  refuse_unknown(obj, known, "");
  ParsedRequest r;
  const json* p = field(obj, "prompt");
  if (!p) throw ApiError::bad_request("'prompt' is required", "prompt", "missing_required_parameter");
  if (p->is_string()) {
    r.job.prompt = tokenizer.encode(p->get<std::string>(), /*add_special_tokens=*/true);
  } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
    r.job.prompt = tokenizer.encode((*p)[0].get<std::string>(), true);
  } else if (p->is_array() && !p->empty() && std::all_of(p->begin(), p->end(), [](const json& v) { return v.is_number_integer(); })) {
    for (const auto& v : *p) {  // token ids
      const int64_t id = v.get<int64_t>();
      if (id < 0 || uint64_t(id) >= tokenizer.vocab_size())
        throw ApiError::bad_request("token id " + std::to_string(id) + " in 'prompt' is outside the vocabulary", "prompt");
      r.job.prompt.push_back(static_cast<uint32_t>(id));
    }
  } else {
    throw ApiError::bad_request("'prompt' must be a string, an array of one string, or an array of token ids", "prompt", "invalid_type");
  }
  common_fields(obj, r, limits);
  parse_constraint_fields(obj, body, tokenizer, /*chat=*/false, r.job);
  check_prompt_length(r, limits, "prompt");
  return r;
}

}  // namespace ember::server
