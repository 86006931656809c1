// llama-server's routes on `ember serve` (/tokenize, /detokenize, /props, /slots), CORS
// (--cors, preflights) and the per-request log line (--log-format, --quiet), over HTTP on
// loopback with the tiny model.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "cli_util.h"
#include "lfm2_test_pack.h"
#include "server_util.h"

using namespace ember;
using json = nlohmann::json;

namespace {


const char* kAllowed = "http://allowed.example:5173";

test::ServerProcess& server() {
  static test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "2", "--cors", std::string(kAllowed) + ", http://second.example", "--log-format",
                                            "text"});
  return s;
}

test::ServerProcess& plain_server() {  // no --cors, --quiet without --log-format: no request log
  static test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "1"});
  return s;
}

json expect_error(const test::HttpReply& r, int status, const std::string& param, const std::string& code = "") {
  EXPECT_EQ(r.status, status) << r.body;
  json e = r.json().value("error", json::object());
  EXPECT_TRUE(e["message"].is_string()) << r.body;
  EXPECT_EQ(e["param"], param) << r.body;
  if (!code.empty()) {
    EXPECT_EQ(e["code"], code) << r.body;
  }
  return e;
}

std::string header(const test::HttpReply& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

// The bytes a /tokenize piece stands for: a string, or the bytes of part of a character.
std::string piece_bytes(const json& piece) {
  if (piece.is_string()) return piece.get<std::string>();
  std::string out;
  for (const auto& b : piece) out += static_cast<char>(b.get<int>());
  return out;
}

// The server's stderr once it holds `needle`: a request's line is written after its response.
std::string log_with(const test::ServerProcess& s, const std::string& needle) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string log = s.log();
  while (log.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    log = s.log();
  }
  return log;
}

}  // namespace

TEST(LlamaEndpoints, TokenizeEqualsEmberTokenizeAndDetokenizeRoundTrips) {
  auto& s = server();
  const std::string text = "Hello world, h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac";
  auto r = test::post(s, "/tokenize", json{{"content", text}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json ids = r.json()["tokens"];
  ASSERT_TRUE(ids.is_array());
  ASSERT_FALSE(ids.empty());
  // The same ids as the CLI's tokenizer (no special tokens added by default, as llama-server).
  auto cli = test::run_ember("tokenize --model " + test::tiny_pack_dir() + " --ids --text '" + text + "'");
  ASSERT_EQ(cli.status, 0) << cli.out;
  std::string joined;
  for (size_t i = 0; i < ids.size(); i++) {
    if (i) joined += ',';
    joined += std::to_string(ids[i].get<int>());
  }
  EXPECT_EQ(joined + "\n", cli.out);

  // add_special: the tokenizer's post-processor too, as `ember tokenize --add-special`.
  auto special = test::post(s, "/tokenize", json{{"content", "Hi there"}, {"add_special", true}}.dump()).json()["tokens"];
  auto cli_special = test::run_ember("tokenize --model " + test::tiny_pack_dir() + " --ids --add-special --text 'Hi there'");
  ASSERT_EQ(cli_special.status, 0) << cli_special.out;
  std::string special_joined;
  for (size_t i = 0; i < special.size(); i++) {
    if (i) special_joined += ',';
    special_joined += std::to_string(special[i].get<int>());
  }
  EXPECT_EQ(special_joined + "\n", cli_special.out);

  auto pieces = test::post(s, "/tokenize", json{{"content", text}, {"with_pieces", true}}.dump()).json()["tokens"];
  ASSERT_EQ(pieces.size(), ids.size());
  std::string spelled;
  for (size_t i = 0; i < pieces.size(); i++) {
    EXPECT_EQ(pieces[i]["id"], ids[i]);
    spelled += piece_bytes(pieces[i]["piece"]);
  }
  EXPECT_EQ(spelled, text);

  auto back = test::post(s, "/detokenize", json{{"tokens", ids}}.dump());
  ASSERT_EQ(back.status, 200) << back.body;
  EXPECT_EQ(back.json()["content"], text);
  EXPECT_EQ(test::post(s, "/detokenize", json{{"tokens", json::array()}}.dump()).json()["content"], "");
}

TEST(LlamaEndpoints, TokenizeAndDetokenizeRefuseBadBodies) {
  auto& s = server();
  expect_error(test::post(s, "/tokenize", "{}"), 400, "content", "missing_required_parameter");
  expect_error(test::post(s, "/tokenize", json{{"content", 5}}.dump()), 400, "content", "invalid_type");
  expect_error(test::post(s, "/tokenize", json{{"content", "a"}, {"with_pieces", "yes"}}.dump()), 400, "with_pieces", "invalid_type");
  expect_error(test::post(s, "/tokenize", json{{"content", "a"}, {"parse_special", false}}.dump()), 400, "parse_special",
               "unsupported_parameter");
  expect_error(test::post(s, "/tokenize", json{{"content", "a"}, {"nope", 1}}.dump()), 400, "nope", "unknown_parameter");
  expect_error(test::post(s, "/detokenize", "{}"), 400, "tokens", "missing_required_parameter");
  expect_error(test::post(s, "/detokenize", json{{"tokens", {1, -2}}}.dump()), 400, "tokens");
  expect_error(test::post(s, "/detokenize", json{{"tokens", {1, 1u << 30}}}.dump()), 400, "tokens");
  expect_error(test::post(s, "/detokenize", json{{"tokens", "1,2"}}.dump()), 400, "tokens", "invalid_type");
  EXPECT_EQ(test::get(s, "/tokenize").status, 405);
  EXPECT_EQ(test::post(s, "/props", "{}").status, 405);
}

TEST(LlamaEndpoints, PropsShape) {
  auto r = test::get(server(), "/props");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  EXPECT_EQ(j["total_slots"], 2);
  EXPECT_EQ(j["model_path"], test::tiny_pack_dir());
  EXPECT_EQ(j["chat_template"], "lfm2");
  EXPECT_EQ(j["build_info"].get<std::string>().rfind("ember ", 0), 0u);
  EXPECT_EQ(j["is_sleeping"], false);
  const json& d = j["default_generation_settings"];
  EXPECT_GT(d["n_ctx"].get<int>(), 16);
  EXPECT_EQ(d["is_processing"], false);
  EXPECT_EQ(d["params"]["temperature"], 1.0);  // OpenAI's defaults, which requests get
  EXPECT_EQ(d["params"]["top_p"], 1.0);
  EXPECT_EQ(d["params"]["n_predict"], 256);
  EXPECT_EQ(j["ember"]["slot_capacity"], d["n_ctx"]);
  EXPECT_NE(j["ember"]["chat_template_example"].get<std::string>().find("<|im_start|>user\nUSER<|im_end|>"), std::string::npos);
}

TEST(LlamaEndpoints, SlotsShowTheRunningRequest) {
  auto& s = server();
  auto idle = test::get(s, "/slots");
  ASSERT_EQ(idle.status, 200) << idle.body;
  ASSERT_EQ(idle.json().size(), 2u);
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(idle.json()[i]["id"], i);
    EXPECT_EQ(idle.json()[i]["is_processing"], false);
  }
  // A long streamed request, read slowly by nobody: it holds its slot while /slots is asked.
  std::atomic<bool> done{false};
  std::thread t([&] {
    json body = {{"model", "tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 400}, {"temperature", 0.5}, {"seed", 7}, {"stream", true}};
    test::post(s, "/v1/completions", body.dump());
    done = true;
  });
  json busy;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    for (const auto& slot : test::get(s, "/slots").json())
      if (slot["is_processing"] == true) busy = slot;
    if (!busy.is_null()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  t.join();
  ASSERT_FALSE(busy.is_null()) << "no slot was seen processing";
  EXPECT_EQ(busy["params"]["n_predict"], 400);
  EXPECT_EQ(busy["params"]["seed"], 7);
  EXPECT_NEAR(busy["params"]["temperature"].get<double>(), 0.5, 1e-6);
  EXPECT_GT(busy["n_prompt_tokens"].get<int>(), 2);
  EXPECT_LE(busy["next_token"]["n_decoded"].get<int>(), 400);
}

TEST(LlamaEndpoints, CorsHeadersOnlyForAllowedOrigins) {
  auto& s = server();
  auto allowed = test::get(s, "/v1/models", {{"Origin", kAllowed}});
  ASSERT_EQ(allowed.status, 200);
  EXPECT_EQ(header(allowed, "Access-Control-Allow-Origin"), kAllowed);
  EXPECT_EQ(header(allowed, "Vary"), "Origin");
  EXPECT_EQ(header(test::get(s, "/health", {{"Origin", "http://second.example"}}), "Access-Control-Allow-Origin"), "http://second.example");
  EXPECT_EQ(header(test::get(s, "/v1/models", {{"Origin", "http://evil.example"}}), "Access-Control-Allow-Origin"), "");
  EXPECT_EQ(header(test::get(s, "/v1/models"), "Access-Control-Allow-Origin"), "");
  // Errors carry them too, so the page can read what went wrong.
  auto bad = test::post(s, "/v1/chat/completions", "{", {{"Origin", kAllowed}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(header(bad, "Access-Control-Allow-Origin"), kAllowed);
  // Without --cors, nothing.
  EXPECT_EQ(header(test::get(plain_server(), "/v1/models", {{"Origin", kAllowed}}), "Access-Control-Allow-Origin"), "");
}

TEST(LlamaEndpoints, PreflightIsAnswered) {
  auto& s = server();
  auto c = s.client();
  auto r = c->Options("/v1/chat/completions", {{"Origin", kAllowed}, {"Access-Control-Request-Method", "POST"},
                                               {"Access-Control-Request-Headers", "authorization, content-type, x-stainless-os"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), kAllowed);
  EXPECT_NE(r->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Headers"), "authorization, content-type, x-stainless-os");
  EXPECT_TRUE(r->body.empty());
  auto denied = c->Options("/v1/chat/completions", {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 403);
  EXPECT_EQ(denied->get_header_value("Access-Control-Allow-Origin"), "");
  // Without --cors an OPTIONS request is just a method the route does not take.
  auto plain = plain_server().client()->Options("/v1/chat/completions", {{"Origin", kAllowed}, {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 405);
  EXPECT_EQ(plain->get_header_value("Access-Control-Allow-Origin"), "");
}

TEST(LlamaEndpoints, PreflightNeedsNoKeyAndAStarAllowsAnyOrigin) {
  test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "1", "--cors", "*", "--api-key", "k1"});
  auto r = s.client()->Options("/v1/models", {{"Origin", "http://anywhere.example"}, {"Access-Control-Request-Method", "GET"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "*");
  auto unauthorized = test::get(s, "/v1/models", {{"Origin", "http://anywhere.example"}});
  EXPECT_EQ(unauthorized.status, 401);
  EXPECT_EQ(header(unauthorized, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(test::get(s, "/props").status, 401) << "llama-server's routes are behind the key too";
  EXPECT_EQ(test::get(s, "/props", {{"Authorization", "Bearer k1"}}).status, 200);
}

TEST(LlamaEndpoints, BadCorsOriginIsAClearError) {
  auto r = test::run_ember("serve --model " + test::tiny_pack_dir() + " --port 0 --quiet --cors localhost:5173");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--cors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'localhost:5173' is not an origin"), std::string::npos) << r.out;
  auto f = test::run_ember("serve --model " + test::tiny_pack_dir() + " --port 0 --quiet --log-format xml");
  EXPECT_NE(f.status, 0);
  EXPECT_NE(f.out.find("--log-format"), std::string::npos) << f.out;
}

TEST(LlamaEndpoints, OneLogLinePerRequest) {
  auto& s = server();
  json body = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "Log me"}}}}, {"max_tokens", 5}, {"temperature", 0}};
  auto r = test::post(s, "/v1/chat/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json usage = r.json()["usage"];
  test::get(s, "/v1/models/none%20here");
  const std::string want = "ember serve: POST /v1/chat/completions 200 prompt_tokens=" + std::to_string(usage["prompt_tokens"].get<int>()) +
                           " completion_tokens=" + std::to_string(usage["completion_tokens"].get<int>()) + " ms=";
  // A line is written once its answer is sent: the next request's line may come first.
  log_with(s, want);
  const std::string log = log_with(s, "/v1/models/none%20here 404");
  EXPECT_NE(log.find(want), std::string::npos) << log;
  EXPECT_NE(log.find("ember serve: GET /v1/models/none%20here 404 prompt_tokens=0 completion_tokens=0 ms="), std::string::npos) << log;
  // --quiet without --log-format: no request lines.
  test::get(plain_server(), "/health");
  EXPECT_EQ(plain_server().log().find("ember serve: GET"), std::string::npos) << plain_server().log();
}

TEST(LlamaEndpoints, JsonLogLines) {
  test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "1", "--log-format", "json"});
  json body = {{"model", "tiny"}, {"prompt", "Hi"}, {"max_tokens", 3}, {"temperature", 0}, {"stream", true}};
  auto r = test::post(s, "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200);
  auto tokens = test::post(s, "/tokenize", json{{"content", "Hi"}, {"add_special", true}}.dump()).json()["tokens"];
  const std::string log = log_with(s, "\"/tokenize\"");
  json line;
  size_t pos = 0;
  while ((pos = log.find('{', pos)) != std::string::npos) {
    size_t end = log.find('\n', pos);
    json j = json::parse(log.substr(pos, end - pos), nullptr, false);
    if (j.is_object() && j.value("path", "") == "/v1/completions") line = j;
    pos = end;
  }
  ASSERT_TRUE(line.is_object()) << log;
  EXPECT_EQ(line["method"], "POST");
  EXPECT_EQ(line["status"], 200);
  EXPECT_EQ(line["prompt_tokens"], tokens.size());
  EXPECT_GE(line["completion_tokens"].get<int>(), 1);
  EXPECT_LE(line["completion_tokens"].get<int>(), 3);
  EXPECT_TRUE(line["ms"].is_number_integer());
  EXPECT_EQ(line["time"].get<std::string>().size(), 20u);
}

TEST(LlamaEndpoints, ContextAndDefaultMaxTokensFlags) {
  test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "1", "-c", "24", "-n", "3"});
  const json props = test::get(s, "/props").json();
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 24);
  EXPECT_EQ(props["default_generation_settings"]["params"]["n_predict"], 3);
  // -n: a request without max_tokens gets 3.
  auto r = test::post(s, "/v1/completions", json{{"prompt", "Once upon a time"}, {"temperature", 0}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_LE(r.json()["usage"]["completion_tokens"].get<int>(), 3);
  // -c: prompt and completion together stay within 24 positions.
  auto big = test::post(s, "/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 100}, {"temperature", 0}}.dump());
  ASSERT_EQ(big.status, 200) << big.body;
  EXPECT_LE(big.json()["usage"]["total_tokens"].get<int>(), 24);
  std::string long_prompt;
  for (int i = 0; i < 30; i++) long_prompt += "ab ";
  auto refused = test::post(s, "/v1/completions", json{{"prompt", long_prompt}, {"max_tokens", 1}}.dump());
  expect_error(refused, 400, "prompt", "context_length_exceeded");
  // More than the pack holds is refused at start.
  auto over = test::run_ember("serve --model " + test::tiny_pack_dir() + " --port 0 --quiet -c 100000000");
  EXPECT_NE(over.status, 0);
  EXPECT_NE(over.out.find("-c/--ctx-size"), std::string::npos) << over.out;
}
