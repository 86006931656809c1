#include "server/openai_format.h"

#include <atomic>
#include <chrono>
#include <random>

namespace ember::server {
namespace {

using json = nlohmann::json;

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json envelope(const ResponseMeta& m, const char* object) {
  return {{"id", m.id}, {"object", object}, {"created", m.created}, {"model", m.model}, {"system_fingerprint", "ember"}};
}

}  // namespace

ResponseMeta new_meta(bool chat, const std::string& model) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  char id[48];
  std::snprintf(id, sizeof id, "%s%016llx%06llx", chat ? "chatcmpl-" : "cmpl-", static_cast<unsigned long long>(salt),
                static_cast<unsigned long long>(counter.fetch_add(1) & 0xffffff));
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return {id, std::chrono::duration_cast<std::chrono::seconds>(now).count(), model, chat};
}

json full_response(const ResponseMeta& meta, const std::string& text, Finish finish, const Usage& usage) {
  return full_response(meta, std::vector<Choice>{{text, finish}}, usage);
}

json full_response(const ResponseMeta& meta, const std::vector<Choice>& choices, const Usage& usage) {
  json j = envelope(meta, meta.chat ? "chat.completion" : "text_completion");
  j["choices"] = json::array();
  for (size_t i = 0; i < choices.size(); i++) {
    json choice = {{"index", i}, {"logprobs", nullptr}, {"finish_reason", finish_reason(choices[i].finish)}};
    if (meta.chat) choice["message"] = {{"role", "assistant"}, {"content", choices[i].text}, {"refusal", nullptr}};
    else choice["text"] = choices[i].text;
    j["choices"].push_back(choice);
  }
  j["usage"] = usage_json(usage);
  return j;
}

json stream_chunk(const ResponseMeta& meta, const std::string& text, std::optional<Finish> finish, bool with_role, uint32_t index) {
  json j = envelope(meta, meta.chat ? "chat.completion.chunk" : "text_completion");
  json choice = {{"index", index}, {"logprobs", nullptr}, {"finish_reason", finish ? json(finish_reason(*finish)) : json(nullptr)}};
  if (meta.chat) {
    json delta = json::object();
    if (with_role) delta["role"] = "assistant";
    if (!finish || !text.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  j["choices"] = json::array({choice});
  return j;
}

json usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  json j = envelope(meta, meta.chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = usage_json(usage);
  return j;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump(j) + "\n\n"; }

}  // namespace ember::server
