// Structured output, logit_bias and logprobs in `ember serve`, on the tiny random-weight pack
// (only the grammar makes its output parse): the official OpenAI Node client drives json_schema
// (100 seeded completions that must all parse and validate), json_object, the GBNF `grammar`
// field, logit_bias and logprobs, each plain and streamed (tests/node/openai_constrained.mjs);
// raw HTTP checks the 400s. One server for all.
#include <gtest/gtest.h>

#include <regex>

#include "cli_util.h"
#include "lfm2_test_pack.h"
#include "tokenizer/tokenizer.h"
#include "server_util.h"

using namespace ember;
using json = nlohmann::json;

namespace {


test::ServerProcess& server() {
  static test::ServerProcess s(test::tiny_pack_dir(), {"--parallel", "4", "--queue", "16"});
  return s;
}

json chat(json extra) {
  json b = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 4}, {"temperature", 0}};
  b.update(extra);
  return b;
}

void expect_400(const json& body, const std::string& param, const std::string& says, const std::string& path = "/v1/chat/completions") {
  auto r = test::post(server(), path, body.dump());
  ASSERT_EQ(r.status, 400) << body.dump() << " -> " << r.body;
  const json e = r.json()["error"];
  EXPECT_EQ(e["param"], param) << r.body;
  EXPECT_NE(e["message"].get<std::string>().find(says), std::string::npos) << r.body;
}

}  // namespace

TEST(ServerConstrained, BadFieldsAreRefusedNamingThem) {
  expect_400(chat({{"grammar", "root ::= \"a"}}), "grammar", "unterminated literal");
  expect_400(chat({{"grammar", "start ::= \"a\""}}), "grammar", "no 'root' rule");
  expect_400(chat({{"grammar", "root ::= \"a\""}, {"response_format", {{"type", "json_object"}}}}), "grammar", "not both");
  expect_400(chat({{"response_format", {{"type", "xml"}}}}), "response_format.type", "xml");
  expect_400(chat({{"response_format", {{"type", "json_schema"}}}}), "response_format.json_schema", "required");
  json fmt = {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "integer"}, {"minimum", 3}}}}}};
  expect_400(chat({{"response_format", fmt}}), "response_format.json_schema.schema", "'minimum'");
  expect_400(chat({{"logit_bias", {{"abc", 1}}}}), "logit_bias", "'abc' is not a token id");
  expect_400(chat({{"logit_bias", {{"99999999", 1}}}}), "logit_bias", "not a token id");
  expect_400(chat({{"logit_bias", {{"7", 101}}}}), "logit_bias", "[-100, 100]");
  expect_400(chat({{"logprobs", true}, {"top_logprobs", 21}}), "top_logprobs", "[0, 20]");
  expect_400(chat({{"top_logprobs", 2}}), "top_logprobs", "needs 'logprobs'");
  expect_400(json{{"prompt", "a"}, {"logprobs", true}}, "logprobs", "integer", "/v1/completions");
  // Neutral values are fine.
  EXPECT_EQ(test::post(server(), "/v1/chat/completions", chat({{"response_format", {{"type", "text"}}}, {"logit_bias", json::object()}}).dump()).status,
            200);
}

TEST(ServerConstrained, OpenAINodeClient) {
  auto& s = server();
  const auto tok = llm::Tokenizer::from_file(test::tiny_pack_dir() + "/tokenizer.json");
  const auto id = [&](const char* t) { return std::to_string(tok.encode(t).at(0)); };
  const std::string base = "http://127.0.0.1:" + std::to_string(s.port()) + "/v1";
  auto [status, out] = test::run_shell("cd " EMBER_SOURCE_DIR " && node tests/node/openai_constrained.mjs " + base + " tiny " + id("\"") +
                                       " " + id("}") + " " + id("x"));
  ASSERT_EQ(status, 0) << out;
  const json j = json::parse(out.substr(out.find("{\"jsonSchema\"")));

  // json_schema: every one of the 100 parses and validates.
  EXPECT_EQ(j["jsonSchema"]["count"], 100);
  EXPECT_EQ(j["jsonSchema"]["parsed"], 100) << j["jsonSchema"].dump();
  EXPECT_EQ(j["jsonSchema"]["validated"], 100) << j["jsonSchema"].dump();
  EXPECT_EQ(j["jsonSchema"]["finishes"], json::array({"stop"}));

  for (const auto& o : j["jsonObject"]) EXPECT_TRUE(o["ok"].get<bool>()) << o.dump();

  const std::regex gram("yes|no|maybe [0-9]{1,3}");
  for (const auto& g : j["grammar"]) {
    EXPECT_TRUE(std::regex_match(g["content"].get<std::string>(), gram)) << g.dump();
    EXPECT_EQ(g["finish"], "stop");
  }

  for (const auto& x : j["logitBias"]) EXPECT_EQ(x, "xxxxxx");

  // Chat logprobs: one entry per token, greedy picks the best, streamed = plain.
  const json& plain = j["chatLogprobs"]["plain"];
  const json& lps = plain["logprobs"];
  ASSERT_EQ(lps.size(), plain["usage"]["completion_tokens"].get<size_t>() - (plain["finish"] == "stop" ? 1 : 0)) << plain.dump();
  std::string bytes;
  for (const auto& e : lps) {
    ASSERT_EQ(e["top_logprobs"].size(), 3u) << e.dump();
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    EXPECT_EQ(e["token"], e["top_logprobs"][0]["token"]);  // temperature 0
    EXPECT_NEAR(e["logprob"].get<double>(), e["top_logprobs"][0]["logprob"].get<double>(), 1e-6);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_GE(e["top_logprobs"][1]["logprob"].get<double>(), e["top_logprobs"][2]["logprob"].get<double>());
    for (const auto& b : e["bytes"]) bytes += static_cast<char>(b.get<int>());
  }
  const std::string content = plain["content"];
  if (content.find("\xef\xbf\xbd") == std::string::npos) {  // (a split character reads U+FFFD)
    EXPECT_EQ(bytes, content);
  }
  EXPECT_EQ(j["chatLogprobs"]["stream"]["logprobs"], lps);
  EXPECT_EQ(j["chatLogprobs"]["stream"]["content"], plain["content"]);

  // Completions: the legacy shape, offsets running over the text; streamed chunks add up to it.
  const json& c = j["completionLogprobs"]["plain"];
  const size_t n = c["tokens"].size();
  ASSERT_GE(n, 1u) << c.dump();
  ASSERT_EQ(c["token_logprobs"].size(), n);
  ASSERT_EQ(c["top_logprobs"].size(), n);
  ASSERT_EQ(c["text_offset"].size(), n);
  size_t offset = 0;
  std::string text;
  for (size_t i = 0; i < n; i++) {
    EXPECT_EQ(c["text_offset"][i].get<size_t>(), offset);
    offset += c["tokens"][i].get<std::string>().size();
    text += c["tokens"][i].get<std::string>();
    EXPECT_LE(c["top_logprobs"][i].size(), 2u);
    EXPECT_GE(c["top_logprobs"][i].size(), 1u);
  }
  if (text.find("\xef\xbf\xbd") == std::string::npos) {
    EXPECT_EQ(text, j["completionLogprobs"]["text"]);
  }
  json joined = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()}, {"text_offset", json::array()}};
  for (const auto& chunk : j["completionLogprobs"]["streamChunks"])
    for (const char* k : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
      for (const auto& v : chunk[k]) joined[k].push_back(v);
  EXPECT_EQ(joined, c);

  EXPECT_EQ(j["unsupported"]["status"], 400);
  EXPECT_EQ(j["unsupported"]["param"], "response_format.json_schema.schema");
  EXPECT_NE(j["unsupported"]["message"].get<std::string>().find("pattern"), std::string::npos);
}
