#include "server/tool_reply.h"

#include <atomic>
#include <random>

namespace ember::server {
namespace {

using json = nlohmann::json;

// "call_" and 24 characters, unique within the process and unlikely across restarts.
std::string new_call_id() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  static const char* digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  uint64_t a = salt, b = counter.fetch_add(1) * 0x9E3779B97F4A7C15ull ^ salt;
  std::string id = "call_";
  for (int i = 0; i < 12; i++, a /= 62) id += digits[a % 62];
  for (int i = 0; i < 12; i++, b /= 62) id += digits[b % 62];
  return id;
}

}  // namespace

ToolReply::ToolReply(const ToolRequest& request, const ResponseMeta& meta)
    : meta_(meta), forced_(request.forced_call()), stream_(request.parallel ? 0 : 1) {
  // A forced call's start marker ends the prompt: the output continues inside the block.
  if (forced_) stream_.push(kToolCallStart);
}

std::vector<ToolCallStream::Event> ToolReply::end(Finish finish) {
  std::vector<ToolCallStream::Event> out;
  if (forced_ && finish == Finish::Stop) out = stream_.push(kToolCallEnd);
  for (auto& e : stream_.finish()) out.push_back(std::move(e));
  return out;
}

json ToolReply::call_json(const ToolCall& call) {
  json j = {{"id", new_call_id()},
            {"type", "function"},
            {"function", {{"name", call.name}, {"arguments", call.arguments.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)}}}};
  calls_.push_back(j);
  return j;
}

std::string ToolReply::events(const std::vector<ToolCallStream::Event>& evs) {
  std::string out;
  for (const auto& e : evs) {
    if (e.calls.empty()) {
      out += sse_event(stream_chunk(meta_, e.content, std::nullopt, false));
      continue;
    }
    for (const auto& call : e.calls) {
      const size_t index = calls_.size();
      json j = call_json(call);
      json head = stream_chunk(meta_, "", std::nullopt, false);
      head["choices"][0]["delta"] = {{"tool_calls", json::array({{{"index", index}, {"id", j["id"]}, {"type", "function"},
                                                                  {"function", {{"name", call.name}, {"arguments", ""}}}}})}};
      json args = stream_chunk(meta_, "", std::nullopt, false);
      args["choices"][0]["delta"] = {{"tool_calls", json::array({{{"index", index}, {"function", {{"arguments", j["function"]["arguments"]}}}}})}};
      out += sse_event(head) + sse_event(args);
    }
  }
  return out;
}

std::string ToolReply::stream(const std::string& text) { return events(stream_.push(text)); }

std::string ToolReply::stream_end(Finish finish) { return events(end(finish)); }

std::string ToolReply::finish_reason(Finish finish) const {
  if (!calls_.empty() && finish == Finish::Stop) return "tool_calls";
  return server::finish_reason(finish);
}

void ToolReply::complete(json& response, const std::string& text, Finish finish) {
  std::string content;
  auto take = [&](const std::vector<ToolCallStream::Event>& evs) {
    for (const auto& e : evs) {
      content += e.content;
      for (const auto& call : e.calls) call_json(call);
    }
  };
  take(stream_.push(text));
  take(end(finish));
  json& choice = response["choices"][0];
  json& message = choice["message"];
  message["content"] = content.empty() && !calls_.empty() ? json(nullptr) : json(content);
  if (!calls_.empty()) message["tool_calls"] = calls_;
  choice["finish_reason"] = finish_reason(finish);
}

}  // namespace ember::server
