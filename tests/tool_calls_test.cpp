// Tool calling without a model: LFM2's call syntax parsed and written back, the streaming
// splitter on every chunking, the request fields and messages turned into template input, the
// forced-call grammar, and OpenAI's response shapes.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "llm/grammar/gbnf.h"
#include "server/api_error.h"
#include "server/chat_messages.h"
#include "server/tool_calls.h"
#include "server/tool_grammar.h"
#include "server/tool_reply.h"
#include "server/tool_request.h"
#include "server/tool_stream.h"

using namespace ember;
using namespace ember::server;
using ojson = nlohmann::ordered_json;

namespace {

std::vector<ToolCall> parse_ok(const std::string& text) {
  std::string error;
  auto calls = parse_lfm2_calls(text, &error);
  EXPECT_TRUE(calls.has_value()) << text << ": " << error;
  return calls.value_or(std::vector<ToolCall>{});
}

std::string parse_error(const std::string& text) {
  std::string error;
  auto calls = parse_lfm2_calls(text, &error);
  EXPECT_FALSE(calls.has_value()) << text;
  return error;
}

// Runs a ToolCallStream over `chunks`; returns (content, call names, args as JSON text).
struct Split {
  std::string content;
  std::vector<std::string> names, args;
  std::vector<std::string> content_pieces;
};
Split split(const std::vector<std::string>& chunks, size_t max_calls = 0) {
  ToolCallStream s(max_calls);
  Split out;
  auto take = [&](const std::vector<ToolCallStream::Event>& evs) {
    for (const auto& e : evs) {
      if (e.calls.empty()) {
        EXPECT_FALSE(e.content.empty());
        out.content += e.content;
        out.content_pieces.push_back(e.content);
      }
      for (const auto& c : e.calls) {
        out.names.push_back(c.name);
        out.args.push_back(c.arguments.dump());
      }
    }
  };
  for (const auto& c : chunks) take(s.push(c));
  take(s.finish());
  return out;
}

ApiError api_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError";
  return ApiError(0, "");
}

std::string param_of(const std::function<void()>& f) { return api_error(f).body()["error"]["param"].get<std::string>(); }

const ojson kWeatherTool = ojson::parse(R"({"type": "function", "function": {"name": "get_weather", "description": "Weather.",
  "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Tokyo"]}, "days": {"type": "integer"},
  "metric": {"type": "boolean"}}, "required": ["city"]}}})");

}  // namespace

TEST(ToolCallParse, KeywordCallsWithPythonLiterals) {
  auto calls = parse_ok(R"([get_weather(city='Paris', days=3, metric=True, note=None, ratio=-1.5e2, alt="it's \"x\"")])");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments.dump(), R"({"city":"Paris","days":3,"metric":true,"note":null,"ratio":-150.0,"alt":"it's \"x\""})");
  calls = parse_ok(R"([f(s='it\'s \u00e9\x41\n\\', t='''tri'ple''', u="\ud83d\ude00", o='\101')])");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments["s"], "it's \xC3\xA9" "A\n\\");
  EXPECT_EQ(calls[0].arguments["t"], "tri'ple");
  EXPECT_EQ(calls[0].arguments["u"], "\xF0\x9F\x98\x80");
  EXPECT_EQ(calls[0].arguments["o"], "A");
}

TEST(ToolCallParse, NestedMultipleDottedAndJsonForms) {
  auto calls = parse_ok("[ math.add(a=1, b=[2, (3, 4), {'k': {\"n\": [True, None]}, 5: 'five'}],) ,\n  no_args(), x-y.z_1(q=true) ]");
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].name, "math.add");
  EXPECT_EQ(calls[0].arguments.dump(), R"({"a":1,"b":[2,[3,4],{"k":{"n":[true,null]},"5":"five"}]})");
  EXPECT_EQ(calls[1].name, "no_args");
  EXPECT_TRUE(calls[1].arguments.empty());
  EXPECT_EQ(calls[2].name, "x-y.z_1");
  // Without brackets; the JSON form; a number too large for int64 becomes a float.
  EXPECT_EQ(parse_ok("f(a=1), g(b=2)").size(), 2u);
  calls = parse_ok(R"([{"name": "f", "arguments": {"a": 1, "b": [1, 2]}}, {"name": "g", "arguments": "{\"c\": true}"}])");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].arguments.dump(), R"({"a":1,"b":[1,2]})");
  EXPECT_EQ(calls[1].arguments.dump(), R"({"c":true})");
  EXPECT_TRUE(parse_ok("[f(n=123456789012345678901234567890)]")[0].arguments["n"].is_number_float());
}

TEST(ToolCallParse, MalformedCallsAreErrorsNotCrashes) {
  EXPECT_NE(parse_error("[f(1)]").find("positional"), std::string::npos);
  EXPECT_NE(parse_error("[f(a=)]").find("value"), std::string::npos);
  EXPECT_NE(parse_error("[f(a=1, a=2)]").find("repeated"), std::string::npos);
  EXPECT_NE(parse_error("[f(a=foo)]").find("not a literal"), std::string::npos);
  EXPECT_NE(parse_error("[]").find("empty"), std::string::npos);
  EXPECT_NE(parse_error("").find("empty"), std::string::npos);
  EXPECT_NE(parse_error("[f(a='x)]").find("unterminated"), std::string::npos);
  EXPECT_NE(parse_error("[f(a=1)] trailing").find("after the call list"), std::string::npos);
  for (const char* bad : {"[f(a=1]", "f(a=1", "[f(a=1)", "[(a=1)]", "[f(a=1.2.3)]", "[f(a={1})]", "[f(a='\\x4')]", "[{\"arguments\": {}}]",
                          "[{\"name\": \"f\", \"arguments\": [1]}]", "[f(a=1e999)]", "[f(a=-)]", "[1]", "[f(a=[1,2)]"})
    parse_error(bad);
  // Deep nesting is refused, not recursed into.
  std::string deep = "[f(a=" + std::string(100000, '[') + "]";
  EXPECT_NE(parse_error(deep).find("deeply"), std::string::npos);
}

TEST(ToolCallParse, FormatRoundTrips) {
  std::vector<ToolCall> calls(2);
  calls[0].name = "get_weather";
  calls[0].arguments = ojson::parse(R"({"city": "Par\"is'\n\u00e9", "days": 2, "ok": false, "none": null, "nested": {"k": [1.5, true]}})");
  calls[1].name = "math.add";
  const std::string text = format_lfm2_calls(calls);
  EXPECT_EQ(text, "[get_weather(city=\"Par\\\"is'\\n\xC3\xA9\", days=2, ok=False, none=None, nested={\"k\": [1.5, True]}), math.add()]");
  auto back = parse_ok(text);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, calls[0].name);
  EXPECT_EQ(back[0].arguments, calls[0].arguments);
  EXPECT_EQ(back[1].name, "math.add");
}

TEST(ToolCallStream, CallTextNeverReachesContentWhateverTheChunking) {
  const std::string text = "Sure. <|tool_call_start|>[get_weather(city='Paris'), f(x=[1, 2])]<|tool_call_end|> Done <|";
  for (size_t chunk : {size_t(1), size_t(2), size_t(3), size_t(7), text.size()}) {
    std::vector<std::string> chunks;
    for (size_t i = 0; i < text.size(); i += chunk) chunks.push_back(text.substr(i, chunk));
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    Split s = split(chunks);
    EXPECT_EQ(s.content, "Sure.  Done <|");
    ASSERT_EQ(s.names.size(), 2u);
    EXPECT_EQ(s.names[0], "get_weather");
    EXPECT_EQ(s.args[0], R"({"city":"Paris"})");
    EXPECT_EQ(s.args[1], R"({"x":[1,2]})");
    for (const auto& piece : s.content_pieces) {
      EXPECT_EQ(piece.find("tool_call"), std::string::npos) << piece;
      EXPECT_EQ(piece.find("Paris"), std::string::npos) << piece;
    }
  }
}

TEST(ToolCallStream, HoldsOnlyWhatCouldBeAMarker) {
  ToolCallStream s;
  auto evs = s.push("abc<|tool_c");
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].content, "abc");
  evs = s.push("x");  // not the marker after all: all of it comes out
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].content, "<|tool_cx");
  EXPECT_FALSE(s.malformed());
}

TEST(ToolCallStream, MalformedAndUnterminatedBlocksComeBackAsText) {
  Split s = split({"a <|tool_call_start|>[f(1)]<|tool_call_end|> b"});
  EXPECT_EQ(s.content, "a <|tool_call_start|>[f(1)]<|tool_call_end|> b");
  EXPECT_TRUE(s.names.empty());
  ToolCallStream t;
  t.push("x<|tool_call_start|>[f(a=");
  EXPECT_TRUE(t.inside_call());
  auto evs = t.finish();
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].content, "<|tool_call_start|>[f(a=");
  EXPECT_TRUE(t.malformed());
  EXPECT_NE(t.error().find("tool_call_end"), std::string::npos);
  // parallel_tool_calls false: the first call only.
  s = split({"<|tool_call_start|>[f(), g()]<|tool_call_end|><|tool_call_start|>[h()]<|tool_call_end|>"}, 1);
  ASSERT_EQ(s.names.size(), 1u);
  EXPECT_EQ(s.names[0], "f");
  EXPECT_TRUE(s.content.empty());
}

TEST(ToolRequestParse, ValidFieldsAndDefaults) {
  ojson body = {{"tools", ojson::array({kWeatherTool})}};
  ToolRequest r = parse_tool_request(body);
  EXPECT_EQ(r.choice, ToolChoice::Auto);
  EXPECT_TRUE(r.offered());
  EXPECT_FALSE(r.forced_call());
  ASSERT_EQ(r.functions.size(), 1u);
  // The function object as written, keys in order.
  EXPECT_EQ(r.functions[0].dump().substr(0, 40), R"({"name":"get_weather","description":"Wea)");
  body["tool_choice"] = "none";
  EXPECT_FALSE(parse_tool_request(body).offered());
  body["tool_choice"] = "required";
  EXPECT_TRUE(parse_tool_request(body).forced_call());
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  body["parallel_tool_calls"] = false;
  r = parse_tool_request(body);
  EXPECT_EQ(r.choice, ToolChoice::Named);
  EXPECT_EQ(r.forced, "get_weather");
  EXPECT_FALSE(r.parallel);
  EXPECT_FALSE(parse_tool_request(ojson::object()).offered());
  EXPECT_FALSE(parse_tool_request({{"tool_choice", "auto"}}).offered());
}

TEST(ToolRequestParse, BadFieldsAre400sNamingTheField) {
  auto bad = [](ojson body) { return param_of([&] { parse_tool_request(body); }); };
  auto tool = [](const char* path, ojson v) {
    ojson t = kWeatherTool;
    t[ojson::json_pointer(path)] = v;
    return ojson{{"tools", ojson::array({t})}};
  };
  EXPECT_EQ(bad({{"tools", "x"}}), "tools");
  EXPECT_EQ(bad({{"tools", ojson::array({1})}}), "tools[0]");
  EXPECT_EQ(bad(tool("/type", "retrieval")), "tools[0].type");
  EXPECT_EQ(bad(tool("/function/name", "bad name!")), "tools[0].function.name");
  EXPECT_EQ(bad(tool("/function/name", 3)), "tools[0].function.name");
  EXPECT_EQ(bad(tool("/function/description", 3)), "tools[0].function.description");
  EXPECT_EQ(bad(tool("/function/parameters", "schema")), "tools[0].function.parameters");
  EXPECT_EQ(bad(tool("/function/parameters/type", "array")), "tools[0].function.parameters.type");
  EXPECT_EQ(bad(tool("/function/parameters/required", ojson::array({1}))), "tools[0].function.parameters.required");
  EXPECT_EQ(bad(tool("/function/extra", 1)), "tools[0].function.extra");
  EXPECT_EQ(bad({{"tools", ojson::array({kWeatherTool, kWeatherTool})}}), "tools[1].function.name");
  auto ok = [](const char* key, ojson v) {
    ojson b = {{"tools", ojson::array({kWeatherTool})}};
    b[key] = std::move(v);
    return b;
  };
  EXPECT_EQ(bad(ok("tool_choice", "sometimes")), "tool_choice");
  EXPECT_EQ(bad(ok("tool_choice", 1)), "tool_choice");
  EXPECT_EQ(bad(ok("tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}})), "tool_choice.function.name");
  EXPECT_EQ(bad(ok("parallel_tool_calls", "yes")), "parallel_tool_calls");
  EXPECT_EQ(bad({{"tool_choice", "required"}}), "tool_choice");
  EXPECT_EQ(api_error([&] { parse_tool_request({{"tools", "x"}}); }).status(), 400);
}

TEST(ToolMessages, OpenAiToolCallsBecomeLfm2CallText) {
  ojson msgs = ojson::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}},
      {"id": "call_2", "type": "function", "function": {"name": "math.add", "arguments": "{\"a\": 1.5, \"b\": 2}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "sunny"}]}])");
  ojson lfm2 = parse_chat_messages(msgs, /*template_renders_tool_calls=*/false);
  EXPECT_EQ(lfm2[1]["content"], "<|tool_call_start|>[get_weather(city=\"Paris\", days=2), math.add(a=1.5, b=2)]<|tool_call_end|>");
  EXPECT_FALSE(lfm2[1].contains("tool_calls"));
  EXPECT_EQ(lfm2[2], ojson::parse(R"({"role": "tool", "content": "sunny", "tool_call_id": "call_1"})"));
  // A template that reads tool_calls gets them, arguments as objects.
  ojson qwen = parse_chat_messages(msgs, true);
  EXPECT_TRUE(qwen[1]["content"].is_null());
  EXPECT_EQ(qwen[1]["tool_calls"][0]["function"]["arguments"], ojson::parse(R"({"city": "Paris", "days": 2})"));
  EXPECT_EQ(qwen[1]["tool_calls"][1]["id"], "call_2");
}

TEST(ToolMessages, BadToolTurnsAre400s) {
  auto bad = [](const char* text) { return param_of([&] { parse_chat_messages(ojson::parse(text), false); }); };
  EXPECT_EQ(bad(R"([{"role": "tool", "content": "x"}])"), "messages[0].tool_call_id");
  EXPECT_EQ(bad(R"([{"role": "tool", "content": "x", "tool_call_id": 5}])"), "messages[0].tool_call_id");
  EXPECT_EQ(bad(R"([{"role": "user", "content": "x", "tool_call_id": "a"}])"), "messages[0].tool_call_id");
  EXPECT_EQ(bad(R"([{"role": "user", "content": "x", "tool_calls": []}])"), "messages[0].tool_calls");
  EXPECT_EQ(bad(R"([{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{nope"}}]}])"),
            "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(bad(R"([{"role": "assistant", "tool_calls": [{"type": "function", "function": {"arguments": "{}"}}]}])"),
            "messages[0].tool_calls[0].function.name");
  EXPECT_EQ(bad(R"j([{"role": "assistant", "tool_calls": "f()"}])j"), "messages[0].tool_calls");
  EXPECT_EQ(bad(R"([{"role": "assistant"}])"), "messages[0].content");
}

TEST(ToolGrammar, ForcedCallGrammarParses) {
  ojson body = {{"tools", ojson::array({kWeatherTool, ojson::parse(R"({"type": "function", "function": {"name": "math.add",
    "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": ["number", "null"]},
    "tags": {"type": "array", "items": {"type": "string"}}, "opts": {"type": "object", "properties": {"x": {"const": 1}}, "required": ["x"]},
    "any": {}, "choice": {"anyOf": [{"type": "boolean"}, {"enum": ["a\"b", 2, null]}]}}}}})"),
    ojson::parse(R"({"type": "function", "function": {"name": "ping"}})")})},
               {"tool_choice", "required"}};
  ToolRequest r = parse_tool_request(body);
  std::string g = tool_call_grammar(r);
  EXPECT_NE(g.find("root ::= \"[\""), std::string::npos) << g;
  EXPECT_NE(g.find("\"get_weather(\""), std::string::npos) << g;
  EXPECT_NE(g.find("(\"\\\"Paris\\\"\" | \"\\\"Tokyo\\\"\")"), std::string::npos) << g;
  EXPECT_NE(g.find("\"ping(\" \")\""), std::string::npos) << g;
  EXPECT_NO_THROW(llm::grammar::parse_gbnf(g)) << g;
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "ping"}}}};
  g = tool_call_grammar(parse_tool_request(body));
  EXPECT_EQ(g.find("get_weather"), std::string::npos) << g;
  EXPECT_NE(g.find("root ::= \"[\" calls-1 \"]\""), std::string::npos) << g;
  EXPECT_NO_THROW(llm::grammar::parse_gbnf(g)) << g;
}

TEST(ToolReplyFormat, ResponseAndStreamShapes) {
  ToolRequest req = parse_tool_request({{"tools", ojson::array({kWeatherTool})}});
  ResponseMeta meta = new_meta(true, "m");
  const std::string text = "Hi <|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>";
  {
    ToolReply reply(req, meta);
    nlohmann::json r = full_response(meta, text, Finish::Stop, {});
    reply.complete(r, text, Finish::Stop);
    const auto& c = r["choices"][0];
    EXPECT_EQ(c["finish_reason"], "tool_calls");
    EXPECT_EQ(c["message"]["content"], "Hi ");
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
    const auto& call = c["message"]["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
    EXPECT_EQ(call["function"]["name"], "get_weather");
    EXPECT_EQ(call["function"]["arguments"], R"({"city":"Paris"})");
  }
  {
    ToolReply reply(req, meta);
    std::string sse = reply.stream(text) + reply.stream_end(Finish::Stop);
    std::vector<nlohmann::json> chunks;
    for (size_t at = 0; (at = sse.find("data: ", at)) != std::string::npos; at += 6)
      chunks.push_back(nlohmann::json::parse(sse.substr(at + 6, sse.find("\n\n", at) - at - 6)));
    ASSERT_EQ(chunks.size(), 3u) << sse;
    EXPECT_EQ(chunks[0]["choices"][0]["delta"]["content"], "Hi ");
    const auto& head = chunks[1]["choices"][0]["delta"]["tool_calls"][0];
    EXPECT_EQ(head["index"], 0);
    EXPECT_EQ(head["type"], "function");
    EXPECT_EQ(head["function"]["name"], "get_weather");
    EXPECT_EQ(head["function"]["arguments"], "");
    const auto& args = chunks[2]["choices"][0]["delta"]["tool_calls"][0];
    EXPECT_EQ(args["index"], 0);
    EXPECT_FALSE(args.contains("id"));
    EXPECT_EQ(args["function"]["arguments"], R"({"city":"Paris"})");
    EXPECT_EQ(reply.finish_reason(Finish::Stop), "tool_calls");
    EXPECT_EQ(reply.finish_reason(Finish::Length), "length");
  }
  {  // malformed: text, "stop"
    ToolReply reply(req, meta);
    nlohmann::json r = full_response(meta, "", Finish::Stop, {});
    reply.complete(r, "<|tool_call_start|>[get_weather(Paris)]<|tool_call_end|>", Finish::Stop);
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(r["choices"][0]["message"]["content"], "<|tool_call_start|>[get_weather(Paris)]<|tool_call_end|>");
    EXPECT_FALSE(r["choices"][0]["message"].contains("tool_calls"));
  }
  {  // forced: the output starts inside the block and the end of generation closes it
    ToolReply reply(parse_tool_request({{"tools", ojson::array({kWeatherTool})}, {"tool_choice", "required"}}), meta);
    nlohmann::json r = full_response(meta, "", Finish::Stop, {});
    reply.complete(r, "[get_weather(city=\"Tokyo\")]", Finish::Stop);
    EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
    EXPECT_TRUE(r["choices"][0]["message"]["content"].is_null());
    EXPECT_EQ(r["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], R"({"city":"Tokyo"})");
  }
}
