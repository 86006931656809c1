// Tool calling through `ember serve` on the tiny random-weight pack: the OpenAI Node client gets a
// forced call (constrained decoding is what makes a random model call) as tool_calls, feeds the
// result back, and streams both; tool fields refused with 400s naming them; tool_choice "none".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "lfm2_test_pack.h"
#include "server_util.h"

using namespace ember;
using json = nlohmann::json;

namespace {

test::ServerProcess& server() {
  static test::ServerProcess s(test::lfm2_test_pack("tiny").string(), {"--parallel", "2", "--queue", "8"});
  return s;
}

const json kTool = json::parse(R"({"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
  "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Tokyo"]}, "days": {"type": "integer"}},
  "required": ["city"]}}})");

json body(const json& extra) {
  json b = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}, {"max_tokens", 40},
            {"temperature", 0}, {"tools", json::array({kTool})}};
  if (extra.is_object()) b.update(extra);
  return b;
}

// Forced calls need the constrained decoder (docs/structured-output.md); a build without it
// refuses the request field that drives it.
bool has_constrained_decoding() {
  json b = {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 1}, {"grammar", "root ::= \"a\""}};
  return test::post(server(), "/v1/chat/completions", b.dump()).status == 200;
}

}  // namespace

TEST(ServerTools, PackCarriesLfm2ToolTemplate) {
  const auto config = test::lfm2_test_pack("tiny") / "tokenizer_config.json";
  ASSERT_TRUE(std::filesystem::exists(config));
  std::ifstream in(config);
  EXPECT_NE(json::parse(in)["chat_template"].get<std::string>().find("<|tool_list_start|>"), std::string::npos);
}

TEST(ServerTools, OpenAINodeClientCallsAndFeedsBack) {
  if (!has_constrained_decoding()) GTEST_SKIP() << "this build has no constrained decoding (branch 'constrained'): no forced calls";
  const std::string base = "http://127.0.0.1:" + std::to_string(server().port()) + "/v1";
  auto [status, out] = test::run_shell("cd " EMBER_SOURCE_DIR " && node tests/node/openai_tools.mjs " + base + " tiny");
  ASSERT_EQ(status, 0) << out;
  json j = json::parse(out.substr(out.find("{\"first\"")));
  // The forced call, parsed.
  EXPECT_EQ(j["first"]["finish"], "tool_calls") << j.dump();
  ASSERT_TRUE(j["first"]["tool_calls"].is_array()) << j.dump();
  ASSERT_GE(j["first"]["tool_calls"].size(), 1u);
  for (const auto& call : j["first"]["tool_calls"]) {
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
    EXPECT_EQ(call["function"]["name"], "get_weather");
    json args = json::parse(call["function"]["arguments"].get<std::string>());
    EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Tokyo") << args.dump();
    if (args.contains("days")) {
      EXPECT_TRUE(args["days"].is_number_integer()) << args.dump();
    }
  }
  EXPECT_TRUE(j["first"]["content"].is_null()) << j.dump();
  // Streamed: the same calls, no call text in the content deltas.
  EXPECT_EQ(j["firstStream"]["finish"], "tool_calls");
  EXPECT_EQ(j["firstStream"]["content"], "");
  ASSERT_EQ(j["firstStream"]["calls"].size(), j["first"]["tool_calls"].size());
  for (size_t i = 0; i < j["firstStream"]["calls"].size(); i++) {
    EXPECT_EQ(j["firstStream"]["calls"][i]["type"], "function");
    EXPECT_EQ(j["firstStream"]["calls"][i]["name"], j["first"]["tool_calls"][i]["function"]["name"]);
    EXPECT_EQ(j["firstStream"]["calls"][i]["arguments"], j["first"]["tool_calls"][i]["function"]["arguments"]);
  }
  // The result fed back: a longer prompt, an answer; streamed alike (greedy).
  EXPECT_GT(j["second"]["prompt_tokens"].get<int>(), j["first"]["usage"]["prompt_tokens"].get<int>());
  EXPECT_TRUE(j["second"]["finish"] == "stop" || j["second"]["finish"] == "length" || j["second"]["finish"] == "tool_calls") << j.dump();
  EXPECT_EQ(j["secondStream"]["finish"], j["second"]["finish"]);
  EXPECT_EQ(j["secondStream"]["content"], j["second"]["content"].is_null() ? json("") : j["second"]["content"]);
  // A named function with parallel_tool_calls false: exactly one call of it.
  EXPECT_EQ(j["named"]["finish"], "tool_calls");
  ASSERT_EQ(j["named"]["tool_calls"].size(), 1u);
  EXPECT_EQ(j["named"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(j["badRequest"]["status"], 400);
  EXPECT_EQ(j["badRequest"]["param"], "tool_choice.function.name");
}

TEST(ServerTools, BadToolFieldsAre400s) {
  auto param = [](const json& b) {
    auto r = test::post(server(), "/v1/chat/completions", b.dump());
    EXPECT_EQ(r.status, 400) << r.body;
    const json reply = r.json();
    return reply["error"]["param"];
  };
  EXPECT_EQ(param(body({{"tools", "x"}})), "tools");
  EXPECT_EQ(param(body({{"tools", json::array({{{"type", "function"}, {"function", {{"name", ""}}}}})}})), "tools[0].function.name");
  EXPECT_EQ(param(body({{"tool_choice", "always"}})), "tool_choice");
  EXPECT_EQ(param(body({{"parallel_tool_calls", 1}})), "parallel_tool_calls");
  json bad_history = body(json::object());
  bad_history["messages"].push_back({{"role", "tool"}, {"content", "21"}});
  EXPECT_EQ(param(bad_history), "messages[1].tool_call_id");
  EXPECT_TRUE(server().alive());
}

TEST(ServerTools, NoneAndAutoAnswerWithoutForcing) {
  for (const char* choice : {"none", "auto"}) {
    auto r = test::post(server(), "/v1/chat/completions", body({{"tool_choice", choice}, {"max_tokens", 6}}).dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json reply = r.json();
    const json& c = reply["choices"][0];
    if (std::string(choice) == "none") {
      EXPECT_FALSE(c["message"].contains("tool_calls")) << r.body;
      EXPECT_NE(c["finish_reason"], "tool_calls");
    }
    EXPECT_TRUE(c["message"]["content"].is_string() || c["message"].contains("tool_calls")) << r.body;
  }
}
