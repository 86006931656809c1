// `ember serve` over HTTP with several choices (n) and prompt reuse: choices[] with their index,
// plain and streamed, each equal to a single request with its seed; the prompt counted (and
// prefilled) once; a second chat turn reporting usage.prompt_tokens_details.cached_tokens with the
// text of a cold server; the OpenAI Node client doing both; choices with a grammar and logprobs
// (each its own matcher and logprobs), and a constrained second turn prefilling only its new tokens.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "lfm2_test_pack.h"
#include "server_util.h"

using namespace ember;
using json = nlohmann::json;

namespace {


json chat(const json& messages, int max_tokens, json extra = json::object()) {
  json b = {{"model", "tiny"}, {"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}};
  b.update(extra);
  return b;
}

json user(const std::string& text) { return json::array({{{"role", "user"}, {"content", text}}}); }

double prefilled(const test::ServerProcess& s) { return test::metric(test::get(s, "/metrics").body, "ember_prefill_tokens_total"); }

// Per choice index: the streamed text and finish_reason; `usage` gets the usage chunk.
std::vector<std::pair<std::string, std::string>> streamed(const test::HttpReply& r, bool is_chat, size_t n, json& usage) {
  std::vector<std::pair<std::string, std::string>> out(n);
  std::vector<int> roles(n, 0);
  for (const auto& d : test::sse_data(r.body)) {
    if (d == "[DONE]") break;
    json j = json::parse(d);
    if (j.contains("usage")) usage = j["usage"];
    for (const auto& c : j["choices"]) {
      const size_t i = c["index"].get<size_t>();
      EXPECT_LT(i, n);
      if (i >= n) continue;
      if (is_chat && c["delta"].contains("role")) roles[i]++;
      if (is_chat && c["delta"].contains("content")) out[i].first += c["delta"]["content"].get<std::string>();
      if (!is_chat) out[i].first += c["text"].get<std::string>();
      if (!c["finish_reason"].is_null()) {
        EXPECT_TRUE(out[i].second.empty()) << "two finishes for choice " << i;
        out[i].second = c["finish_reason"].get<std::string>();
      }
    }
  }
  for (size_t i = 0; i < n && is_chat; i++) {
    EXPECT_EQ(roles[i], 1) << "choice " << i;
  }
  return out;
}

}  // namespace

TEST(ServerSlotsHttp, TwoChoicesEqualSingleRunsWithTheirSeeds) {
  test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "2"});
  const json sampling = {{"temperature", 1.0}, {"top_p", 1.0}, {"seed", 4242}};
  for (bool is_chat : {true, false}) {
    const std::string path = is_chat ? "/v1/chat/completions" : "/v1/completions";
    auto body = [&](json extra) {
      json b = is_chat ? chat(user("Pick a number"), 9, sampling) : json{{"model", "tiny"}, {"prompt", "Pick a number"}, {"max_tokens", 9}};
      if (!is_chat) b.update(sampling);
      b.update(extra);
      return b.dump();
    };
    const double before = prefilled(s);
    auto both = test::post(s, path, body({{"n", 2}}));
    ASSERT_EQ(both.status, 200) << both.body;
    json j = both.json();
    const int prompt_tokens = j["usage"]["prompt_tokens"].get<int>();
    if (is_chat) {  // the first request of this server: nothing to reuse, the prompt prefilled once
      EXPECT_EQ(prefilled(s) - before, prompt_tokens);
    }
    ASSERT_EQ(j["choices"].size(), 2u);
    int completion_tokens = 0;
    std::vector<std::string> texts;
    for (int i = 0; i < 2; i++) {
      EXPECT_EQ(j["choices"][i]["index"], i);
      auto one = test::post(s, path, body({{"seed", 4242 + i}}));
      ASSERT_EQ(one.status, 200) << one.body;
      const json c1 = one.json()["choices"][0];
      const json& ci = j["choices"][i];
      texts.push_back(is_chat ? ci["message"]["content"].get<std::string>() : ci["text"].get<std::string>());
      EXPECT_EQ(texts.back(), is_chat ? c1["message"]["content"].get<std::string>() : c1["text"].get<std::string>()) << "choice " << i;
      EXPECT_EQ(ci["finish_reason"], c1["finish_reason"]);
      EXPECT_EQ(one.json()["usage"]["prompt_tokens"], prompt_tokens);
      completion_tokens += one.json()["usage"]["completion_tokens"].get<int>();
    }
    EXPECT_NE(texts[0], texts[1]);
    EXPECT_EQ(j["usage"]["completion_tokens"], completion_tokens) << "completion tokens of every choice";
    EXPECT_EQ(j["usage"]["total_tokens"], prompt_tokens + completion_tokens) << "the prompt once";

    json usage;
    auto st = test::post(s, path, body({{"n", 2}, {"stream", true}, {"stream_options", {{"include_usage", true}}}}));
    ASSERT_EQ(st.status, 200) << st.body;
    auto parts = streamed(st, is_chat, 2, usage);
    for (int i = 0; i < 2; i++) {
      EXPECT_EQ(parts[i].first, texts[i]) << "streamed choice " << i;
      EXPECT_EQ(parts[i].second, j["choices"][i]["finish_reason"]);
    }
    EXPECT_EQ(usage["completion_tokens"], j["usage"]["completion_tokens"]);
    EXPECT_EQ(usage["prompt_tokens"], prompt_tokens);
  }
  // More choices than slots: 400 naming n.
  auto three = test::post(s, "/v1/chat/completions", chat(user("x"), 2, {{"n", 3}}).dump());
  EXPECT_EQ(three.status, 400);
  EXPECT_EQ(three.json()["error"]["param"], "n");
}

// A second chat turn (the first, its reply, a new message) reuses the slot: cached_tokens covers
// at least the first turn's prompt, only the rest is prefilled, and the reply is a cold server's.
TEST(ServerSlotsHttp, SecondChatTurnReportsCachedTokens) {
  json turn2_messages;
  std::string warm_text;
  {
    test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "2"});
    const json ask = user("What is the capital of France?");
    auto t1 = test::post(s, "/v1/chat/completions", chat(ask, 8).dump());
    ASSERT_EQ(t1.status, 200) << t1.body;
    EXPECT_EQ(t1.json()["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    turn2_messages = ask;
    turn2_messages.push_back({{"role", "assistant"}, {"content", t1.json()["choices"][0]["message"]["content"]}});
    turn2_messages.push_back({{"role", "user"}, {"content", "And of Spain?"}});
    const double before = prefilled(s);
    auto t2 = test::post(s, "/v1/chat/completions", chat(turn2_messages, 8).dump());
    ASSERT_EQ(t2.status, 200) << t2.body;
    const json u = t2.json()["usage"];
    const int cached = u["prompt_tokens_details"]["cached_tokens"].get<int>();
    EXPECT_GE(cached, t1.json()["usage"]["prompt_tokens"].get<int>());
    EXPECT_LT(cached, u["prompt_tokens"].get<int>());
    EXPECT_EQ(prefilled(s) - before, u["prompt_tokens"].get<int>() - cached);
    EXPECT_EQ(test::metric(test::get(s, "/metrics").body, "ember_prompt_cached_tokens_total"), cached);
    warm_text = t2.json()["choices"][0]["message"]["content"];
  }
  test::ServerProcess cold(test::tiny_pack_dir(), {"--parallel", "1"});
  auto c = test::post(cold, "/v1/chat/completions", chat(turn2_messages, 8).dump());
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.json()["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(c.json()["choices"][0]["message"]["content"], warm_text);
}

// n choices of a request with a grammar and logprobs: each choice follows the grammar on its own
// (its own matcher: the choices differ, so a shared one would refuse or corrupt them), carries its
// own logprobs (their bytes spell its text), equals a single request with its seed, and streams
// the same logprobs under its index. A second turn with the grammar reuses the slot's caches.
TEST(ServerSlotsHttp, ChoicesWithAGrammarHaveTheirOwnMatcherAndLogprobs) {
  test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "3"});
  const std::regex gram("yes|no|maybe [0-9]{1,3}");
  const json ask = user("Will it rain?");
  auto body = [&](const json& messages, json extra) {
    json b = chat(messages, 16, {{"temperature", 1.0}, {"seed", 77}, {"grammar", "root ::= \"yes\" | \"no\" | \"maybe \" [0-9]{1,3}"},
                                 {"logprobs", true}, {"top_logprobs", 2}});
    b.update(extra);
    return b.dump();
  };
  auto spelled = [](const json& entries) {
    std::string out;
    for (const auto& e : entries)
      for (const auto& b : e["bytes"]) out += static_cast<char>(b.get<int>());
    return out;
  };
  auto r = test::post(s, "/v1/chat/completions", body(ask, {{"n", 3}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.json();
  ASSERT_EQ(j["choices"].size(), 3u) << r.body;
  std::set<std::string> distinct;
  for (int i = 0; i < 3; i++) {
    const json& c = j["choices"][i];
    const std::string text = c["message"]["content"];
    EXPECT_TRUE(std::regex_match(text, gram)) << "choice " << i << ": " << text;
    EXPECT_EQ(c["finish_reason"], "stop");
    distinct.insert(text);
    const json& lps = c["logprobs"]["content"];
    ASSERT_FALSE(lps.empty()) << c.dump();
    EXPECT_EQ(spelled(lps), text) << "choice " << i;
    for (const auto& e : lps) EXPECT_LE(e["top_logprobs"].size(), 2u);

    auto one = test::post(s, "/v1/chat/completions", body(ask, {{"seed", 77 + i}}));
    ASSERT_EQ(one.status, 200) << one.body;
    const json c1 = one.json()["choices"][0];
    EXPECT_EQ(c1["message"]["content"], text) << "choice " << i;
    ASSERT_EQ(c1["logprobs"]["content"].size(), lps.size()) << "choice " << i;
    for (size_t k = 0; k < lps.size(); k++) {
      EXPECT_EQ(c1["logprobs"]["content"][k]["token"], lps[k]["token"]);
      EXPECT_NEAR(c1["logprobs"]["content"][k]["logprob"].get<double>(), lps[k]["logprob"].get<double>(), 1e-4);
    }
  }
  EXPECT_GE(distinct.size(), 2u) << r.body;  // seeds 77..79 on random weights: not all alike

  auto st = test::post(s, "/v1/chat/completions", body(ask, {{"n", 3}, {"stream", true}}));
  ASSERT_EQ(st.status, 200) << st.body;
  std::vector<json> streamed_lps(3, json::array());
  std::vector<std::string> texts(3);
  for (const auto& d : test::sse_data(st.body)) {
    if (d == "[DONE]") break;
    const json chunk = json::parse(d);
    for (const auto& c : chunk["choices"]) {
      const size_t i = c["index"].get<size_t>();
      ASSERT_LT(i, 3u);
      if (c["delta"].contains("content")) texts[i] += c["delta"]["content"].get<std::string>();
      if (c.contains("logprobs") && !c["logprobs"].is_null())
        for (const auto& e : c["logprobs"]["content"]) streamed_lps[i].push_back(e);
    }
  }
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(texts[i], j["choices"][i]["message"]["content"]) << "streamed choice " << i;
    EXPECT_EQ(spelled(streamed_lps[i]), texts[i]) << "streamed choice " << i;
  }

  // The next turn, constrained too: only the tokens after the cached prefix are prefilled.
  json turn2 = ask;
  turn2.push_back({{"role", "assistant"}, {"content", j["choices"][0]["message"]["content"]}});
  turn2.push_back({{"role", "user"}, {"content", "Are you sure?"}});
  const double before = prefilled(s);
  auto t2 = test::post(s, "/v1/chat/completions", body(turn2, json::object()));
  ASSERT_EQ(t2.status, 200) << t2.body;
  const json u = t2.json()["usage"];
  const int cached = u["prompt_tokens_details"]["cached_tokens"].get<int>();
  EXPECT_GT(cached, 0) << t2.body;
  EXPECT_EQ(prefilled(s) - before, u["prompt_tokens"].get<int>() - cached);
  EXPECT_TRUE(std::regex_match(t2.json()["choices"][0]["message"]["content"].get<std::string>(), gram)) << t2.body;
}

TEST(ServerSlotsHttp, OpenAINodeClientChoicesAndCachedTokens) {
  test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "2"});
  const std::string base = "http://127.0.0.1:" + std::to_string(s.port()) + "/v1";
  auto [status, out] = test::run_shell("cd " EMBER_SOURCE_DIR " && node tests/node/openai_slots.mjs " + base + " tiny");
  ASSERT_EQ(status, 0) << out;
  json j = json::parse(out.substr(out.find("{\"plain\"")));
  ASSERT_EQ(j["plain"]["choices"].size(), 2u);
  for (int i = 0; i < 2; i++) {
    EXPECT_EQ(j["plain"]["choices"][i]["index"], i);
    EXPECT_EQ(j["stream"]["content"][i], j["plain"]["choices"][i]["content"]) << "choice " << i;
    EXPECT_EQ(j["stream"]["finish"][i], j["plain"]["choices"][i]["finish"]);
  }
  EXPECT_NE(j["plain"]["choices"][0]["content"], j["plain"]["choices"][1]["content"]);
  EXPECT_EQ(j["stream"]["usage"]["completion_tokens"], j["plain"]["usage"]["completion_tokens"]);
  EXPECT_EQ(j["completion"]["choices"].size(), 2u);
  EXPECT_EQ(j["completion"]["choices"][1]["index"], 1);
  EXPECT_GE(j["turn2"]["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), j["turn1"]["usage"]["prompt_tokens"].get<int>());
}
