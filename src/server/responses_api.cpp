#include "server/responses_api.h"

#include <set>

#include "common/error.h"
#include "server/api_error.h"
#include "server/openai_format.h"
#include "server/request_log.h"

namespace ember::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

[[noreturn]] void unsupported(const std::string& field, const std::string& what) {
  throw ApiError::bad_request("'" + field + "' " + what + " is not supported by this server (text in, text out)", field,
                              "unsupported_parameter");
}

[[noreturn]] void wrong_type(const std::string& field, const std::string& want) {
  throw ApiError::bad_request("'" + field + "' must be " + want, field, "invalid_type");
}

const json* given(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

const std::set<std::string> kKnown = {
    "model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream", "stream_options", "store", "metadata",
    "user", "safety_identifier", "prompt_cache_key", "service_tier", "parallel_tool_calls", "truncation", "tools", "tool_choice",
    "text", "reasoning", "include", "top_logprobs", "background", "previous_response_id", "conversation", "prompt",
    "context_management", "moderation", "prompt_cache_options", "prompt_cache_retention", "max_tool_calls"};

// Known fields with nothing to do here: only their neutral value passes.
void require_neutral(const json& obj) {
  for (const char* f : {"previous_response_id", "conversation", "prompt", "context_management", "moderation", "prompt_cache_options",
                        "prompt_cache_retention", "max_tool_calls"})
    if (given(obj, f)) unsupported(f, "");
  if (const json* v = given(obj, "tools"); v && !(v->is_array() && v->empty())) unsupported("tools", "(tool calls)");
  if (const json* v = given(obj, "tool_choice"); v && !(v->is_string() && (*v == "none" || *v == "auto"))) unsupported("tool_choice", "");
  if (const json* v = given(obj, "background"); v && *v != false) unsupported("background", "true");
  if (const json* v = given(obj, "include"); v && !(v->is_array() && v->empty())) unsupported("include", "");
  if (const json* v = given(obj, "top_logprobs"); v && *v != 0) unsupported("top_logprobs", "(log probabilities)");
  if (const json* v = given(obj, "truncation"); v && *v != "disabled") unsupported("truncation", "other than \"disabled\"");
  if (const json* v = given(obj, "reasoning")) {
    if (!v->is_object()) wrong_type("reasoning", "an object");
    for (auto it = v->begin(); it != v->end(); ++it)
      if (!it->is_null()) unsupported("reasoning." + it.key(), "");
  }
  if (const json* v = given(obj, "text")) {
    if (!v->is_object()) wrong_type("text", "an object");
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (it.key() == "format") {
        if (!it->is_null() && !(it->is_object() && it->value("type", json()) == "text" && it->size() == 1))
          unsupported("text.format", "other than {\"type\": \"text\"}");
      } else if (it.key() != "verbosity") unsupported("text." + it.key(), "");
    }
  }
  for (const char* f : {"store", "parallel_tool_calls"})
    if (const json* v = given(obj, f); v && !v->is_boolean()) wrong_type(f, "a boolean");
  for (const char* f : {"user", "safety_identifier", "prompt_cache_key", "service_tier", "model"})
    if (const json* v = given(obj, f); v && !v->is_string()) wrong_type(f, "a string");
  if (const json* v = given(obj, "metadata"); v && !v->is_object()) wrong_type("metadata", "an object");
  if (const json* v = given(obj, "stream_options"); v && !v->is_object()) wrong_type("stream_options", "an object");
}

// One input item as a chat message (role, text).
json message_of(const json& item, const std::string& at) {
  if (!item.is_object()) wrong_type(at, "an object (a message item)");
  const json* type = given(item, "type");
  if (type && *type != "message")
    unsupported(at + ".type", "'" + (type->is_string() ? type->get<std::string>() : type->dump()) + "' (only message items)");
  for (auto it = item.begin(); it != item.end(); ++it)
    if (it.key() != "type" && it.key() != "role" && it.key() != "content" && it.key() != "id" && it.key() != "status" && it.key() != "phase")
      throw ApiError::bad_request("unrecognized argument '" + it.key() + "' in " + at, at + "." + it.key(), "unknown_parameter");
  const json* role = given(item, "role");
  if (!role) throw ApiError::bad_request("'" + at + ".role' is required", at + ".role", "missing_required_parameter");
  if (!role->is_string() || !(*role == "user" || *role == "assistant" || *role == "system" || *role == "developer"))
    throw ApiError::bad_request("'" + at + ".role' must be user, assistant, system or developer", at + ".role");
  const json* content = given(item, "content");
  if (!content) throw ApiError::bad_request("'" + at + ".content' is required", at + ".content", "missing_required_parameter");
  std::string text;
  if (content->is_string()) text = content->get<std::string>();
  else if (content->is_array()) {
    for (size_t j = 0; j < content->size(); j++) {
      const json& part = (*content)[j];
      const std::string pat = at + ".content[" + std::to_string(j) + "]";
      if (!part.is_object()) wrong_type(pat, "an object");
      const json ptype = part.value("type", json());
      if (ptype != "input_text" && ptype != "output_text")
        unsupported(pat + ".type", "'" + (ptype.is_string() ? ptype.get<std::string>() : ptype.dump()) + "' (only input_text and output_text)");
      const json* t = given(part, "text");
      if (!t || !t->is_string()) wrong_type(pat + ".text", "a string");
      text += t->get<std::string>();
    }
  } else wrong_type(at + ".content", "a string or an array of input_text parts");
  return {{"role", *role == "developer" ? "system" : role->get<std::string>()}, {"content", text}};
}

// An ApiError from the chat parser, its parameter named as this API names it.
ApiError renamed(const ApiError& e) {
  json err = e.body()["error"];
  std::optional<std::string> param;
  if (err["param"].is_string()) {
    std::string p = err["param"];
    if (p.rfind("messages", 0) == 0) p = "input";
    else if (p == "max_tokens") p = "max_output_tokens";
    param = p;
  }
  std::string message = err["message"];
  for (auto [from, to] : {std::pair<std::string, std::string>{"'max_tokens'", "'max_output_tokens'"}, {"'messages'", "'input'"}})
    if (size_t at = message.find(from); at != std::string::npos) message.replace(at, from.size(), to);
  return ApiError(e.status(), message, err["type"], param, err["code"].is_string() ? std::optional<std::string>(err["code"]) : std::nullopt);
}

}  // namespace

ResponsesRequest parse_responses_request(const std::string& body, const llm::Tokenizer& tokenizer, const ParseLimits& limits) {
  json obj = parse_json_object(body, limits.max_json_depth);
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!kKnown.count(it.key()))
      throw ApiError::bad_request("unrecognized request argument supplied: '" + it.key() + "'", it.key(), "unknown_parameter");
  require_neutral(obj);
  ResponsesRequest r;
  json messages = json::array();
  if (const json* ins = given(obj, "instructions")) {
    if (!ins->is_string()) wrong_type("instructions", "a string");
    r.instructions = *ins;
    if (!ins->get<std::string>().empty()) messages.push_back({{"role", "system"}, {"content", *ins}});
  }
  const json* input = given(obj, "input");
  if (!input) throw ApiError::bad_request("'input' is required", "input", "missing_required_parameter");
  if (input->is_string()) messages.push_back({{"role", "user"}, {"content", *input}});
  else if (input->is_array()) {
    if (input->empty()) throw ApiError::bad_request("'input' must not be empty", "input", "empty_array");
    for (size_t i = 0; i < input->size(); i++) messages.push_back(message_of((*input)[i], "input[" + std::to_string(i) + "]"));
  } else wrong_type("input", "a string or an array of message items");

  // The rest is a chat completion: one parser, one set of checks and defaults.
  json chat = {{"messages", messages}};
  if (const json* v = given(obj, "model")) chat["model"] = *v;
  if (const json* v = given(obj, "max_output_tokens")) {
    chat["max_tokens"] = *v;
    r.max_output_tokens = *v;
  }
  for (const char* f : {"temperature", "top_p"})
    if (const json* v = given(obj, f)) chat[f] = *v;
  if (const json* v = given(obj, "stream")) {
    if (!v->is_boolean()) wrong_type("stream", "a boolean");
  }
  if (const json* v = given(obj, "metadata")) r.metadata = *v;
  if (const json* v = given(obj, "user")) r.user = *v;
  try {
    r.parsed = parse_chat_request(chat.dump(), tokenizer, limits);
  } catch (const ApiError& e) {
    throw renamed(e);
  } catch (const Error& e) {  // text the tokenizer refuses
    throw ApiError::bad_request(e.what(), "input");
  }
  r.parsed.stream = obj.value("stream", json(false)) == true;
  r.temperature = r.parsed.job.sampling.temperature;
  r.top_p = r.parsed.job.sampling.top_p;
  return r;
}

ResponseWriter::ResponseWriter(const ResponsesRequest& request, const std::string& model) : request_(request), model_(model) {
  const ResponseMeta meta = new_meta(true, model);  // its unique id, under this API's prefixes
  const std::string unique = meta.id.substr(meta.id.find('-') + 1);
  id_ = "resp_" + unique;
  message_id_ = "msg_" + unique;
  created_ = meta.created;
}

json ResponseWriter::message(const std::string& text, const char* status) const {
  json content = json::array();
  if (std::string(status) != "in_progress") content.push_back({{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}});
  return {{"id", message_id_}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

json ResponseWriter::response(const std::string& text, std::optional<Finish> finish, uint32_t input_tokens, uint32_t output_tokens,
                              const std::string& error) const {
  std::string status = "in_progress";
  json incomplete = nullptr, err = nullptr, output = json::array(), usage = nullptr;
  if (finish) {
    const bool cut = *finish == Finish::Length || *finish == Finish::Cancelled;
    status = cut ? "incomplete" : *finish == Finish::Error ? "failed" : "completed";
    // Cancelled: the server shut down before the end (a client that left hears nothing).
    if (cut) incomplete = {{"reason", *finish == Finish::Length ? "max_output_tokens" : "cancelled"}};
    if (*finish == Finish::Error) err = {{"code", "server_error"}, {"message", error}};
    else output.push_back(message(text, status.c_str()));
    usage = {{"input_tokens", input_tokens}, {"input_tokens_details", {{"cached_tokens", 0}}}, {"output_tokens", output_tokens},
             {"output_tokens_details", {{"reasoning_tokens", 0}}}, {"total_tokens", input_tokens + output_tokens}};
  }
  return {{"id", id_}, {"object", "response"}, {"created_at", created_}, {"status", status}, {"background", false},
          {"error", err}, {"incomplete_details", incomplete}, {"instructions", request_.instructions},
          {"max_output_tokens", request_.max_output_tokens}, {"model", model_}, {"output", output},
          {"parallel_tool_calls", false}, {"previous_response_id", nullptr}, {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
          {"store", false}, {"temperature", request_.temperature}, {"text", {{"format", {{"type", "text"}}}}}, {"tool_choice", "none"},
          {"tools", json::array()}, {"top_p", request_.top_p}, {"truncation", "disabled"}, {"usage", usage},
          {"user", request_.user}, {"metadata", request_.metadata}};
}

std::string ResponseWriter::event(const std::string& type, json fields) {
  fields["type"] = type;
  fields["sequence_number"] = sequence_++;
  return "event: " + type + "\ndata: " + dump(fields) + "\n\n";
}

void serve_responses(const HttpRequest& req, HttpResponder& res, llm::Session& session, Scheduler& scheduler, const ParseLimits& limits,
                     const std::string& model_name) {
  ResponsesRequest r = parse_responses_request(req.body, session.tokenizer(), limits);
  const uint32_t input_tokens = static_cast<uint32_t>(r.parsed.job.prompt.size());
  r.parsed.job.max_tokens = std::min(r.parsed.job.max_tokens, limits.capacity - input_tokens);  // -c bounds the output too
  note_request_tokens(input_tokens, 0);
  std::shared_ptr<Job> job = scheduler.submit(std::move(r.parsed.job));
  ResponseWriter w(r, model_name);
  constexpr auto kPoll = std::chrono::milliseconds(100);  // how soon a vanished client frees its slot
  std::string text;

  if (!r.parsed.stream) {
    Job::Update u;
    do {
      u = job->wait(kPoll);
      text += u.text;
      if (!u.done && res.client_gone()) {
        job->cancel();
        return res.abandon();
      }
    } while (!u.done);
    note_request_tokens(input_tokens, u.completion_tokens);
    res.send(u.finish == Finish::Error ? 500 : 200, "application/json", dump(w.response(text, u.finish, input_tokens, u.completion_tokens, u.error)));
    return;
  }

  auto gone = [&] {
    job->cancel();
    res.abandon();
  };
  if (!res.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}})) return gone();
  const json started = w.response("", std::nullopt, 0, 0);
  std::string head = w.event("response.created", {{"response", started}});
  head += w.event("response.in_progress", {{"response", started}});
  head += w.event("response.output_item.added", {{"output_index", 0}, {"item", w.message("", "in_progress")}});
  const json empty_part = {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}, {"logprobs", json::array()}};
  head += w.event("response.content_part.added", {{"item_id", w.message_id()}, {"output_index", 0}, {"content_index", 0}, {"part", empty_part}});
  if (!res.write(head)) return gone();
  auto last_write = Clock::now();
  while (true) {
    Job::Update u = job->wait(kPoll);
    if (!u.text.empty()) {
      text += u.text;
      const json delta = {{"item_id", w.message_id()}, {"output_index", 0}, {"content_index", 0}, {"delta", u.text}, {"logprobs", json::array()}};
      if (!res.write(w.event("response.output_text.delta", delta))) return gone();
      last_write = Clock::now();
    }
    if (!u.done) {
      if (res.client_gone()) return gone();
      if (Clock::now() - last_write > std::chrono::seconds(2)) {  // an SSE comment: finds a client gone while queued
        if (!res.write(": keep-alive\n\n")) return gone();
        last_write = Clock::now();
      }
      continue;
    }
    note_request_tokens(input_tokens, u.completion_tokens);
    const json final_response = w.response(text, u.finish, input_tokens, u.completion_tokens, u.error);
    std::string tail;
    if (u.finish != Finish::Error) {
      const json item = final_response["output"][0];
      const json part = item["content"][0];
      tail += w.event("response.output_text.done",
                      {{"item_id", w.message_id()}, {"output_index", 0}, {"content_index", 0}, {"text", text}, {"logprobs", json::array()}});
      tail += w.event("response.content_part.done", {{"item_id", w.message_id()}, {"output_index", 0}, {"content_index", 0}, {"part", part}});
      tail += w.event("response.output_item.done", {{"output_index", 0}, {"item", item}});
    }
    const std::string status = final_response["status"];
    const std::string last = status == "incomplete" ? "response.incomplete" : status == "failed" ? "response.failed" : "response.completed";
    tail += w.event(last, {{"response", final_response}});
    if (!res.write(tail) || !res.end_stream()) return gone();
    return;
  }
}

}  // namespace ember::server
