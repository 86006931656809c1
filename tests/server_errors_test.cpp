// `ember serve` under bad input: every refused request has its status and an OpenAI-style error
// body; the API key; the body limit; a fuzz run of a few thousand malformed bodies while the
// server stays up and keeps answering correctly.
#include <gtest/gtest.h>

#include <random>

#include "lfm2_test_pack.h"
#include "server_util.h"

using namespace ember;
using json = nlohmann::json;

namespace {

test::ServerProcess& server() {
  static test::ServerProcess s(test::lfm2_test_pack("tiny").string(), {"--parallel", "4", "--queue", "8", "--max-body", "65536", "--max-tokens-cap", "4"});
  return s;
}

const std::string kChat = "/v1/chat/completions";

// Checks the OpenAI error shape; returns the "error" object.
json expect_error(const test::HttpReply& r, int status, const std::string& param = "", const std::string& code = "") {
  EXPECT_EQ(r.status, status) << r.body;
  json j = r.json();
  EXPECT_TRUE(j.is_object() && j.contains("error")) << r.body;
  if (!j.is_object() || !j.contains("error")) return json::object();
  const json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << r.body;
  EXPECT_TRUE(e["type"].is_string()) << r.body;
  EXPECT_TRUE(e.contains("param") && e.contains("code")) << r.body;
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << r.body;
  }
  if (!code.empty()) {
    EXPECT_EQ(e["code"], code) << r.body;
  }
  return e;
}

json good_chat() { return {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}, {"temperature", 0}}; }

json with(json base, const std::string& key, json value) {
  base[key] = std::move(value);
  return base;
}

}  // namespace

TEST(ServerErrors, MalformedJson) {
  for (const char* body : {"{", "not json", "{\"messages\": [}", "", "[1,2]", "\"str\"", "{\"a\":1}garbage"}) {
    auto r = test::post(server(), kChat, body);
    EXPECT_EQ(r.status, 400) << "body: " << body;
    expect_error(r, 400);
  }
  expect_error(test::post(server(), kChat, "{nope}"), 400, "", "invalid_json");
  expect_error(test::post(server(), kChat, "[]"), 400, "", "invalid_json");
}

TEST(ServerErrors, WrongTypes) {
  expect_error(test::post(server(), kChat, with(good_chat(), "temperature", "hot").dump()), 400, "temperature", "invalid_type");
  expect_error(test::post(server(), kChat, with(good_chat(), "max_tokens", 2.5).dump()), 400, "max_tokens", "invalid_type");
  expect_error(test::post(server(), kChat, with(good_chat(), "stream", "yes").dump()), 400, "stream", "invalid_type");
  expect_error(test::post(server(), kChat, with(good_chat(), "messages", "hi").dump()), 400, "messages", "invalid_type");
  expect_error(test::post(server(), kChat, with(good_chat(), "stop", json::array({1})).dump()), 400, "stop", "invalid_type");
  expect_error(test::post(server(), kChat, with(good_chat(), "messages", json::array({{{"role", "user"}, {"content", 5}}})).dump()), 400,
               "messages[0].content", "invalid_type");
  expect_error(test::post(server(), kChat, with(good_chat(), "messages", json::array({{{"role", "robot"}, {"content", "x"}}})).dump()), 400,
               "messages[0].role");
  expect_error(test::post(server(), "/v1/completions", json{{"prompt", json::object()}}.dump()), 400, "prompt", "invalid_type");
}

TEST(ServerErrors, UnknownAndUnsupportedFields) {
  auto e = expect_error(test::post(server(), kChat, with(good_chat(), "frobnicate", 1).dump()), 400, "frobnicate", "unknown_parameter");
  EXPECT_NE(e["message"].get<std::string>().find("frobnicate"), std::string::npos);
  expect_error(test::post(server(), kChat, with(good_chat(), "n", 2).dump()), 400, "n", "unsupported_parameter");
  expect_error(test::post(server(), kChat, with(good_chat(), "top_logprobs", 3).dump()), 400, "top_logprobs");  // needs logprobs
  // Neutral values and nulls of known fields are fine.
  auto ok = test::post(server(), kChat, with(with(with(good_chat(), "n", 1), "logprobs", false), "user", "u1").dump());
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(test::post(server(), kChat, with(good_chat(), "top_p", nullptr).dump()).status, 200);
}

TEST(ServerErrors, OutOfRangeValues) {
  expect_error(test::post(server(), kChat, with(good_chat(), "temperature", 5).dump()), 400, "temperature");
  expect_error(test::post(server(), kChat, with(good_chat(), "top_p", 0).dump()), 400, "top_p");
  expect_error(test::post(server(), kChat, with(good_chat(), "top_k", 1000).dump()), 400, "top_k");
  expect_error(test::post(server(), kChat, with(good_chat(), "max_tokens", 0).dump()), 400, "max_tokens");
  expect_error(test::post(server(), kChat, with(good_chat(), "max_tokens", -3).dump()), 400, "max_tokens");
  expect_error(test::post(server(), kChat, with(good_chat(), "presence_penalty", 3).dump()), 400, "presence_penalty");
  expect_error(test::post(server(), kChat, with(good_chat(), "stop", json::array({"a", "b", "c", "d", "e"})).dump()), 400, "stop");
  expect_error(test::post(server(), kChat, with(good_chat(), "stop", "").dump()), 400, "stop");
  expect_error(test::post(server(), kChat, with(good_chat(), "seed", 1e30).dump()), 400, "seed");
  expect_error(test::post(server(), "/v1/completions", json{{"prompt", {1, -2}}}.dump()), 400, "prompt");
}

TEST(ServerErrors, EmptyAndTooLongPrompts) {
  expect_error(test::post(server(), kChat, with(good_chat(), "messages", json::array()).dump()), 400, "messages", "empty_array");
  json no_messages = good_chat();
  no_messages.erase("messages");
  expect_error(test::post(server(), kChat, no_messages.dump()), 400, "messages", "missing_required_parameter");
  const int ctx = test::get(server(), "/v1/models").json()["data"][0]["context_length"].get<int>();
  std::string long_text;
  for (int i = 0; i < ctx + 10; i++) long_text += "word ";
  auto e = expect_error(test::post(server(), kChat, with(good_chat(), "messages", json::array({{{"role", "user"}, {"content", long_text}}})).dump()),
                        400, "messages", "context_length_exceeded");
  expect_error(test::post(server(), "/v1/completions", json{{"prompt", long_text}}.dump()), 400, "prompt", "context_length_exceeded");
}

TEST(ServerErrors, InvalidUtf8AndDeepNesting) {
  expect_error(test::post(server(), kChat, "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}"), 400, "", "invalid_json");
  std::string deep(60000, '[');
  expect_error(test::post(server(), kChat, deep), 400, "", "invalid_json");
  EXPECT_TRUE(server().alive());
}

TEST(ServerErrors, BodyTooLargeUnknownRouteWrongMethod) {
  std::string big = good_chat().dump();
  big.insert(1, "\"pad\": \"" + std::string(70000, 'x') + "\", ");
  expect_error(test::post(server(), kChat, big), 413, "", "request_too_large");
  expect_error(test::get(server(), "/v1/nothing"), 404, "", "not_found");
  expect_error(test::post(server(), "/v2/chat", "{}"), 404, "", "not_found");
  auto m = test::get(server(), kChat);
  expect_error(m, 405, "", "method_not_allowed");
  EXPECT_EQ(m.headers.find("Allow")->second, "POST");
  expect_error(test::post(server(), "/v1/models", "{}"), 405, "", "method_not_allowed");
}

TEST(ServerErrors, ApiKey) {
  test::ServerProcess s(test::lfm2_test_pack("tiny").string(), {"--api-key", "sekret", "--parallel", "1"});
  expect_error(test::post(s, kChat, good_chat().dump()), 401, "", "invalid_api_key");
  expect_error(test::post(s, kChat, good_chat().dump(), {{"Authorization", "Bearer wrong"}}), 401, "", "invalid_api_key");
  expect_error(test::get(s, "/v1/models", {{"Authorization", "sekret"}}), 401, "", "invalid_api_key");
  EXPECT_EQ(test::post(s, kChat, good_chat().dump(), {{"Authorization", "Bearer sekret"}}).status, 200);
  EXPECT_EQ(test::get(s, "/health").status, 200);  // health and metrics stay open for probes
  EXPECT_EQ(test::get(s, "/metrics").status, 200);
}

TEST(ServerErrors, FuzzedBodiesLeaveTheServerUp) {
  // A few thousand mutations of valid bodies (byte flips, truncations, insertions, type swaps)
  // from 4 clients over keep-alive connections. Every answer must be a well-formed HTTP reply:
  // 200 with a completion or 4xx with an error body; never a dropped connection or a 5xx.
  const std::vector<std::string> seeds = {
      good_chat().dump(),
      json{{"prompt", "abc"}, {"max_tokens", 1}, {"stop", {"x"}}, {"seed", 1}}.dump(),
      with(good_chat(), "stream", true).dump(),
  };
  const std::string tokens[] = {"{", "}", "[", "]", ",", ":", "\"", "null", "true", "-1", "1e999", "\\u0000", "\xc3", "\x80", "99999999999999999999"};
  std::atomic<int> bad{0}, done{0};
  std::mutex m;
  std::string first_bad;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; t++)
    clients.emplace_back([&, t] {
      std::mt19937 rng(1234 + t);
      auto c = server().client(30);
      c->set_keep_alive(true);
      for (int i = 0; i < 750 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(90); i++) {
        std::string b = seeds[rng() % seeds.size()];
        const int edits = 1 + rng() % 4;
        for (int e = 0; e < edits && !b.empty(); e++) {
          size_t at = rng() % b.size();
          switch (rng() % 4) {
            case 0: b[at] = static_cast<char>(rng() % 256); break;
            case 1: b.resize(at); break;
            case 2: b.insert(at, tokens[rng() % std::size(tokens)]); break;
            default: b.erase(at, 1 + rng() % 8); break;
          }
        }
        const bool completions = b.find("prompt") != std::string::npos;
        auto r = c->Post(completions ? "/v1/completions" : "/v1/chat/completions", b, "application/json");
        done++;
        const bool ok = r && (r->status == 200 || (r->status >= 400 && r->status < 500 && r->body.find("\"error\"") != std::string::npos));
        if (!ok) {
          bad++;
          std::lock_guard lock(m);
          if (first_bad.empty()) first_bad = (r ? std::to_string(r->status) + " " + r->body : "no response") + " for body: " + b;
        }
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_GE(done.load(), 2000);
  EXPECT_EQ(bad.load(), 0) << first_bad;
  ASSERT_TRUE(server().alive()) << server().log();
  auto r = test::post(server(), kChat, good_chat().dump());
  EXPECT_EQ(r.status, 200) << r.body;
}
