// `ember serve` end to end over HTTP on loopback with the tiny model: OpenAI response shapes
// (plain and streamed), greedy output = `ember generate`, concurrent = sequential, a client that
// disconnects frees its slot, 503 beyond the queue, the OpenAI Node client, graceful shutdown,
// two servers behind nginx, and a small load run.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "cli_util.h"
#include "lfm2_test_pack.h"
#include "server_util.h"

using namespace ember;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {


test::ServerProcess& shared_server() {
  static test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "4", "--queue", "16"});
  return s;
}

json chat_body(const std::string& text, int max_tokens, json extra = json::object()) {
  json b = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", text}}}}, {"max_tokens", max_tokens}, {"temperature", 0}};
  b.update(extra);
  return b;
}

json completion_body(const std::string& prompt, int max_tokens, json extra = json::object()) {
  json b = {{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
  b.update(extra);
  return b;
}

// The text of a completion (plain or streamed) from either endpoint.
std::string text_of(const test::HttpReply& r, bool chat, bool stream) {
  if (!stream) {
    json j = r.json();
    return chat ? j["choices"][0]["message"]["content"].get<std::string>() : j["choices"][0]["text"].get<std::string>();
  }
  std::string out;
  for (const auto& d : test::sse_data(r.body)) {
    if (d == "[DONE]") break;
    json j = json::parse(d);
    for (const auto& c : j["choices"]) {
      if (chat && c["delta"].contains("content")) out += c["delta"]["content"].get<std::string>();
      if (!chat) out += c["text"].get<std::string>();
    }
  }
  return out;
}

// A response without what differs between two runs of the same request (id, timestamp).
std::string answer(const test::HttpReply& r) {
  json j = r.json();
  return json{{"choices", j["choices"]}, {"usage", j["usage"]}}.dump();
}

}  // namespace

TEST(Server, ModelsAndHealth) {
  auto& s = shared_server();
  auto m = test::get(s, "/v1/models");
  ASSERT_EQ(m.status, 200) << m.body;
  json j = m.json();
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["owned_by"], "ember");
  EXPECT_TRUE(j["data"][0]["id"].is_string());
  auto one = test::get(s, "/v1/models/" + j["data"][0]["id"].get<std::string>());
  EXPECT_EQ(one.status, 200);
  EXPECT_EQ(test::get(s, "/v1/models/nope").status, 404);
  auto h = test::get(s, "/health");
  ASSERT_EQ(h.status, 200);
  EXPECT_EQ(h.json()["status"], "ok");
  EXPECT_EQ(h.json()["slots"], 4);
}

TEST(Server, ChatCompletionShape) {
  auto r = test::post(shared_server(), "/v1/chat/completions", chat_body("Hello there", 8).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.headers.find("Content-Type")->second.find("application/json"), std::string::npos);
  json j = r.json();
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_TRUE(j["created"].is_number_integer());
  EXPECT_TRUE(j["model"].is_string());
  ASSERT_EQ(j["choices"].size(), 1u);
  const json& c = j["choices"][0];
  EXPECT_EQ(c["index"], 0);
  EXPECT_EQ(c["message"]["role"], "assistant");
  EXPECT_TRUE(c["message"]["content"].is_string());
  EXPECT_TRUE(c["logprobs"].is_null());
  EXPECT_TRUE(c["finish_reason"] == "stop" || c["finish_reason"] == "length");
  const json& u = j["usage"];
  EXPECT_GT(u["prompt_tokens"].get<int>(), 3);
  EXPECT_GE(u["completion_tokens"].get<int>(), 1);
  EXPECT_LE(u["completion_tokens"].get<int>(), 8);
  EXPECT_EQ(u["total_tokens"].get<int>(), u["prompt_tokens"].get<int>() + u["completion_tokens"].get<int>());
  if (c["finish_reason"] == "length") {
    EXPECT_EQ(u["completion_tokens"], 8);
  }
}

TEST(Server, ChatStreamingShapeAndSameTextAsPlain) {
  auto& s = shared_server();
  auto plain = test::post(s, "/v1/chat/completions", chat_body("Tell me a story", 10).dump());
  ASSERT_EQ(plain.status, 200);
  auto r = test::post(s, "/v1/chat/completions",
                      chat_body("Tell me a story", 10, {{"stream", true}, {"stream_options", {{"include_usage", true}}}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.headers.find("Content-Type")->second.find("text/event-stream"), std::string::npos);
  auto events = test::sse_data(r.body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string id;
  int finishes = 0;
  for (size_t i = 0; i + 1 < events.size(); i++) {
    json j = json::parse(events[i]);
    EXPECT_EQ(j["object"], "chat.completion.chunk");
    if (id.empty()) id = j["id"];
    EXPECT_EQ(j["id"], id) << "one id for the whole stream";
    EXPECT_TRUE(j["created"].is_number_integer());
    if (i == 0) {
      EXPECT_EQ(j["choices"][0]["delta"]["role"], "assistant");
    }
    if (i + 2 == events.size()) {  // the usage chunk: no choices
      EXPECT_TRUE(j["choices"].empty());
      EXPECT_EQ(j["usage"], plain.json()["usage"]);
      continue;
    }
    ASSERT_EQ(j["choices"].size(), 1u);
    if (!j["choices"][0]["finish_reason"].is_null()) {
      finishes++;
      EXPECT_EQ(j["choices"][0]["finish_reason"], plain.json()["choices"][0]["finish_reason"]);
    }
    EXPECT_FALSE(j.contains("usage"));
  }
  EXPECT_EQ(finishes, 1);
  EXPECT_EQ(text_of(r, true, true), text_of(plain, true, false));
}

TEST(Server, CompletionShapePlainAndStreamed) {
  auto& s = shared_server();
  auto r = test::post(s, "/v1/completions", completion_body("The quick brown fox", 7).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_TRUE(j["choices"][0]["text"].is_string());
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_TRUE(j["usage"]["completion_tokens"].is_number_integer());
  auto st = test::post(s, "/v1/completions", completion_body("The quick brown fox", 7, {{"stream", true}}).dump());
  ASSERT_EQ(st.status, 200);
  auto events = test::sse_data(st.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  for (size_t i = 0; i + 1 < events.size(); i++) EXPECT_EQ(json::parse(events[i])["object"], "text_completion");
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], j["choices"][0]["finish_reason"]);
  EXPECT_EQ(text_of(st, false, true), text_of(r, false, false));
}

TEST(Server, GreedyOutputEqualsEmberGenerate) {
  auto& s = shared_server();
  for (bool chat : {false, true}) {
    const std::string prompt = "Hello world, this is ember";
    auto g = test::run_ember("generate --quiet --json --model " + test::tiny_pack_dir() + " --temperature 0 -n 16 --prompt '" + prompt + "'" +
                             (chat ? " --chat" : ""));
    ASSERT_EQ(g.status, 0) << g.out;
    json gj = json::parse(g.out.substr(g.out.find('{')));
    auto r = chat ? test::post(s, "/v1/chat/completions", chat_body(prompt, 16).dump())
                  : test::post(s, "/v1/completions", completion_body(prompt, 16).dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(text_of(r, chat, false), gj["text"].get<std::string>()) << (chat ? "chat" : "completion");
    EXPECT_EQ(r.json()["usage"]["completion_tokens"], gj["generated_tokens"]);
    EXPECT_EQ(r.json()["usage"]["prompt_tokens"], gj["prompt_tokens"]);
  }
}

TEST(Server, EightConcurrentRequestsEqualSequential) {
  auto& s = shared_server();
  // Greedy and seeded sampling, both endpoints, different lengths: joins and leaves mid-batch.
  std::vector<std::pair<std::string, json>> reqs;
  for (int i = 0; i < 8; i++) {
    json extra = i % 2 ? json{{"temperature", 1.0}, {"top_p", 0.9}, {"seed", 100 + i}} : json::object();
    if (i % 3 == 0) reqs.push_back({"/v1/completions", completion_body("prompt number " + std::to_string(i), 6 + 3 * i, extra)});
    else reqs.push_back({"/v1/chat/completions", chat_body("question " + std::to_string(i) + "?", 6 + 3 * i, extra)});
  }
  // The server's count of sequence decodes run by the batched decoder (its /metrics).
  auto batched_rows = [&] {
    const std::string text = test::get(s, "/metrics").body;
    const std::string key = "\nember_batched_decode_rows_total ";
    const size_t at = text.find(key);
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + key.size()));
  };
  std::vector<std::string> seq, conc(reqs.size());
  for (auto& [path, body] : reqs) {
    auto r = test::post(s, path, body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    seq.push_back(answer(r));
  }
  const double before = batched_rows();
  ASSERT_GE(before, 0) << "no ember_batched_decode_rows_total in /metrics";
  std::vector<std::thread> threads;
  for (size_t i = 0; i < reqs.size(); i++)
    threads.emplace_back([&, i] {
      auto r = test::post(s, reqs[i].first, reqs[i].second.dump());
      conc[i] = r.status == 200 ? answer(r) : "HTTP " + std::to_string(r.status) + r.body;
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < reqs.size(); i++) EXPECT_EQ(conc[i], seq[i]) << "request " << i;
  // The concurrent requests really were decoded together (one at a time, nothing is batched).
  EXPECT_GT(batched_rows(), before);
}

TEST(Server, DisconnectFreesTheSlotAndFullServerSays503) {
  test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "1", "--queue", "0"});
  auto ctx = test::get(s, "/v1/models").json()["data"][0]["context_length"].get<int>();
  // A long stream; the client reads two chunks and hangs up.
  std::atomic<int> chunks{0};
  std::atomic<bool> hang_up{false};
  std::thread streamer([&] {
    auto c = s.client();
    json body = completion_body("a long story", ctx - 16, {{"stream", true}, {"temperature", 1.0}, {"seed", 3}});
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      chunks++;
      return !hang_up.load();
    };
    c->send(req);
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (chunks < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GE(chunks.load(), 2);
  auto busy = test::post(s, "/v1/completions", completion_body("another", 4).dump());
  EXPECT_EQ(busy.status, 503) << busy.body;
  EXPECT_TRUE(busy.headers.count("Retry-After"));
  EXPECT_EQ(busy.json()["error"]["code"], "server_busy");
  hang_up = true;
  streamer.join();
  int active = 1;
  while (active != 0 && std::chrono::steady_clock::now() < deadline) {
    active = test::get(s, "/health").json()["active"].get<int>();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(active, 0) << "the disconnected client's slot was not freed";
  auto after = test::post(s, "/v1/completions", completion_body("another", 4).dump());
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(Server, SigtermFinishesInFlightStreams) {
  test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "2"});
  std::string body;
  std::atomic<bool> started{false};
  std::thread t([&] {
    auto c = s.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.body = chat_body("hi", 40, {{"stream", true}}).dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
      body.append(d, n);
      started = true;
      return true;
    };
    c->send(req);
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(s.stop(SIGTERM), 0) << s.log();
  t.join();
  auto ev = test::sse_data(body);
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back(), "[DONE]") << "the in-flight stream was cut instead of finished";
}

TEST(Server, OpenAINodeClient) {
  auto& s = shared_server();
  const std::string base = "http://127.0.0.1:" + std::to_string(s.port()) + "/v1";
  auto [status, out] = test::run_shell("cd " EMBER_SOURCE_DIR " && node tests/node/openai_client.mjs " + base + " tiny");
  ASSERT_EQ(status, 0) << out;
  json j = json::parse(out.substr(out.find("{\"chat\"")));
  auto plain = test::post(s, "/v1/chat/completions", chat_body("Say something.", 12).dump());
  EXPECT_EQ(j["chat"]["object"], "chat.completion");
  EXPECT_EQ(j["chat"]["role"], "assistant");
  EXPECT_EQ(j["chat"]["content"], text_of(plain, true, false));
  EXPECT_EQ(j["stream"]["content"], j["chat"]["content"]);
  EXPECT_EQ(j["stream"]["finish"], j["chat"]["finish"]);
  EXPECT_EQ(j["stream"]["usage"], j["chat"]["usage"]);
  EXPECT_EQ(j["completion"]["object"], "text_completion");
  EXPECT_EQ(j["models"].size(), 1u);
  EXPECT_EQ(j["badRequest"]["status"], 400);
  EXPECT_EQ(j["badRequest"]["param"], "messages");
}
