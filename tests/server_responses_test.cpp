// POST /v1/responses on `ember serve` with the tiny model: the response object, the streamed
// events in order, the same text as a chat completion of the same conversation, the 400s, and
// the official OpenAI Node client (responses.create, plain and streamed).
#include <gtest/gtest.h>

#include "lfm2_test_pack.h"
#include "server_util.h"

using namespace ember;
using json = nlohmann::json;

namespace {

test::ServerProcess& server() {
  static test::ServerProcess s(test::lfm2_test_pack("tiny").string(), {"--parallel", "2"});
  return s;
}

json responses_body(json extra) {
  json b = {{"model", "tiny"}, {"input", "Tell me a story"}, {"max_output_tokens", 10}, {"temperature", 0}};
  b.update(extra);
  return b;
}

// The chat completion of the same conversation: {text, finish_reason, usage}.
json chat_of(const json& messages, int max_tokens) {
  json body = {{"model", "tiny"}, {"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}};
  auto r = test::post(server(), "/v1/chat/completions", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  json j = r.json();
  return {{"text", j["choices"][0]["message"]["content"]}, {"finish", j["choices"][0]["finish_reason"]}, {"usage", j["usage"]}};
}

void expect_error(const test::HttpReply& r, const std::string& param, const std::string& code) {
  EXPECT_EQ(r.status, 400) << r.body;
  json e = r.json().value("error", json::object());
  EXPECT_EQ(e["param"], param) << r.body;
  EXPECT_EQ(e["code"], code) << r.body;
  EXPECT_TRUE(e["message"].is_string()) << r.body;
}

// A stream's events: (event name, data).
std::vector<std::pair<std::string, json>> events_of(const std::string& body) {
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string ev = body.substr(pos, end - pos);
    pos = end + 2;
    if (ev.rfind("event: ", 0) != 0) continue;
    const size_t nl = ev.find('\n');
    out.emplace_back(ev.substr(7, nl - 7), json::parse(ev.substr(nl + 7)));
  }
  return out;
}

}  // namespace

TEST(Responses, ShapeAndSameTextAsChat) {
  auto r = test::post(server(), "/v1/responses", responses_body({{"instructions", "Be brief."}, {"metadata", {{"k", "v"}}}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  EXPECT_EQ(j["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(j["object"], "response");
  EXPECT_TRUE(j["created_at"].is_number_integer());
  EXPECT_EQ(j["model"], test::get(server(), "/v1/models").json()["data"][0]["id"]);  // the server's name for its model
  EXPECT_EQ(j["instructions"], "Be brief.");
  EXPECT_EQ(j["max_output_tokens"], 10);
  EXPECT_EQ(j["metadata"], (json{{"k", "v"}}));
  EXPECT_TRUE(j["error"].is_null());
  ASSERT_EQ(j["output"].size(), 1u);
  const json& msg = j["output"][0];
  EXPECT_EQ(msg["type"], "message");
  EXPECT_EQ(msg["role"], "assistant");
  EXPECT_EQ(msg["id"].get<std::string>().rfind("msg_", 0), 0u);
  ASSERT_EQ(msg["content"].size(), 1u);
  EXPECT_EQ(msg["content"][0]["type"], "output_text");
  EXPECT_TRUE(msg["content"][0]["annotations"].is_array());

  json chat = chat_of({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Tell me a story"}}}, 10);
  EXPECT_EQ(msg["content"][0]["text"], chat["text"]);
  EXPECT_EQ(j["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(j["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
  EXPECT_EQ(j["usage"]["total_tokens"], chat["usage"]["total_tokens"]);
  // max_output_tokens reached: incomplete, as OpenAI says it.
  if (chat["finish"] == "length") {
    EXPECT_EQ(j["status"], "incomplete");
    EXPECT_EQ(j["incomplete_details"]["reason"], "max_output_tokens");
    EXPECT_EQ(msg["status"], "incomplete");
  } else {
    EXPECT_EQ(j["status"], "completed");
    EXPECT_TRUE(j["incomplete_details"].is_null());
  }
}

TEST(Responses, MessageItemsAreTheConversation) {
  json input = {{{"role", "developer"}, {"content", "You answer."}},
                {{"type", "message"}, {"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "Hi "}}, {{"type", "input_text"}, {"text", "there"}}}}},
                {{"type", "message"}, {"role", "assistant"}, {"id", "msg_1"}, {"status", "completed"},
                 {"content", {{{"type", "output_text"}, {"text", "Hello."}, {"annotations", json::array()}}}}},
                {{"role", "user"}, {"content", "And now?"}}};
  auto r = test::post(server(), "/v1/responses", responses_body({{"input", input}, {"max_output_tokens", 6}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json chat = chat_of({{{"role", "system"}, {"content", "You answer."}}, {{"role", "user"}, {"content", "Hi there"}},
                       {{"role", "assistant"}, {"content", "Hello."}}, {{"role", "user"}, {"content", "And now?"}}},
                      6);
  EXPECT_EQ(r.json()["output"][0]["content"][0]["text"], chat["text"]);
  EXPECT_EQ(r.json()["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
}

TEST(Responses, StreamEventsInOrder) {
  auto plain = test::post(server(), "/v1/responses", responses_body(json::object()).dump());
  ASSERT_EQ(plain.status, 200);
  auto r = test::post(server(), "/v1/responses", responses_body({{"stream", true}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.headers.find("Content-Type")->second.find("text/event-stream"), std::string::npos);
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  auto events = events_of(r.body);
  ASSERT_GE(events.size(), 9u) << r.body;
  std::vector<std::string> head, tail;
  std::string deltas;
  for (size_t i = 0; i < events.size(); i++) {
    const auto& [name, data] = events[i];
    EXPECT_EQ(data["type"], name);
    EXPECT_EQ(data["sequence_number"], i);
    if (name == "response.output_text.delta") {
      deltas += data["delta"].get<std::string>();
      EXPECT_EQ(data["output_index"], 0);
      EXPECT_EQ(data["content_index"], 0);
    } else (deltas.empty() && tail.empty() ? head : tail).push_back(name);
  }
  const std::vector<std::string> want_head = {"response.created", "response.in_progress", "response.output_item.added",
                                              "response.content_part.added"};
  EXPECT_EQ(head, want_head);
  const json final_response = events.back().second["response"];
  const std::string last = final_response["status"] == "incomplete" ? "response.incomplete" : "response.completed";
  const std::vector<std::string> want_tail = {"response.output_text.done", "response.content_part.done", "response.output_item.done", last};
  EXPECT_EQ(tail, want_tail);
  EXPECT_EQ(events[0].second["response"]["status"], "in_progress");
  EXPECT_TRUE(events[2].second["item"]["content"].empty());
  const std::string item_id = events[2].second["item"]["id"];
  EXPECT_EQ(events[3].second["item_id"], item_id);
  // The streamed text and final object are the plain response's.
  const json p = plain.json();
  EXPECT_EQ(deltas, p["output"][0]["content"][0]["text"]);
  EXPECT_EQ(events[events.size() - 4].second["text"], deltas);
  EXPECT_EQ(final_response["output"], json::array({events[events.size() - 2].second["item"]}));
  EXPECT_EQ(final_response["output"][0]["content"][0]["text"], deltas);
  EXPECT_EQ(final_response["usage"], p["usage"]);
  EXPECT_EQ(final_response["status"], p["status"]);
  EXPECT_EQ(final_response["id"], events[0].second["response"]["id"]);
}

TEST(Responses, UnsupportedFieldsAreNamed) {
  auto& s = server();
  auto bad = [&](json extra, const std::string& param, const std::string& code) {
    expect_error(test::post(s, "/v1/responses", responses_body(std::move(extra)).dump()), param, code);
  };
  bad({{"tools", {{{"type", "function"}, {"name", "f"}}}}}, "tools", "unsupported_parameter");
  bad({{"previous_response_id", "resp_1"}}, "previous_response_id", "unsupported_parameter");
  bad({{"reasoning", {{"effort", "high"}}}}, "reasoning.effort", "unsupported_parameter");
  bad({{"text", {{"format", {{"type", "json_object"}}}}}}, "text.format", "unsupported_parameter");
  bad({{"background", true}}, "background", "unsupported_parameter");
  bad({{"input", {{{"type", "function_call_output"}, {"call_id", "c"}, {"output", "x"}}}}}, "input[0].type", "unsupported_parameter");
  bad({{"input", {{{"role", "user"}, {"content", {{{"type", "input_image"}, {"image_url", "data:"}}}}}}}}, "input[0].content[0].type",
      "unsupported_parameter");
  bad({{"frobnicate", 1}}, "frobnicate", "unknown_parameter");
  bad({{"max_tokens", 5}}, "max_tokens", "unknown_parameter");  // the chat name is not this API's
  bad({{"input", nullptr}}, "input", "missing_required_parameter");
  bad({{"input", json::array()}}, "input", "empty_array");
  bad({{"input", 5}}, "input", "invalid_type");
  bad({{"input", {{{"role", "robot"}, {"content", "x"}}}}}, "input[0].role", "invalid_value");
  bad({{"max_output_tokens", 0}}, "max_output_tokens", "invalid_value");
  bad({{"temperature", 3}}, "temperature", "invalid_value");
  std::string long_input;
  for (int i = 0; i < 3000; i++) long_input += "ab ";
  bad({{"input", long_input}}, "input", "context_length_exceeded");
  // Neutral values pass.
  auto ok = test::post(s, "/v1/responses",
                       responses_body({{"tools", json::array()}, {"tool_choice", "auto"}, {"store", false}, {"text", {{"format", {{"type", "text"}}}}},
                                       {"reasoning", nullptr}, {"truncation", "disabled"}, {"user", "u1"}})
                           .dump());
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST(Responses, OpenAINodeClient) {
  auto& s = server();
  const std::string base = "http://127.0.0.1:" + std::to_string(s.port()) + "/v1";
  auto [status, out] = test::run_shell("cd " EMBER_SOURCE_DIR " && node tests/node/responses_client.mjs " + base + " tiny");
  ASSERT_EQ(status, 0) << out;
  json j = json::parse(out.substr(out.find("{\"plain\"")));
  json chat = chat_of({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Say something."}}}, 12);
  EXPECT_EQ(j["plain"]["object"], "response");
  EXPECT_EQ(j["plain"]["output_text"], chat["text"]) << "the SDK's output_text is the message's text";
  EXPECT_EQ(j["plain"]["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
  EXPECT_EQ(j["plain"]["status"], chat["finish"] == "length" ? "incomplete" : "completed");
  EXPECT_EQ(j["stream"]["deltas"], chat["text"]);
  EXPECT_EQ(j["stream"]["final_text"], chat["text"]);
  EXPECT_EQ(j["stream"]["final_status"], j["plain"]["status"]);
  EXPECT_EQ(j["stream"]["final_usage"], j["plain"]["usage"]);
  EXPECT_EQ(j["stream"]["types"][0], "response.created");
  const json& seq = j["stream"]["sequence"];
  for (size_t i = 0; i < seq.size(); i++) EXPECT_EQ(seq[i], i);
  EXPECT_EQ(j["badRequest"]["status"], 400);
  EXPECT_EQ(j["badRequest"]["param"], "tools");
  EXPECT_EQ(j["badRequest"]["code"], "unsupported_parameter");
}
