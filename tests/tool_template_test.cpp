// Tools through the chat template, against jinja2's renderings (tests/fixtures/chat_templates,
// tools/golden/make_chat_template_goldens.py): ember's LFM2 template is the one `ember synth lfm2`
// writes; OpenAI messages with tool_calls and tool results, as the server turns them into
// template input, render as LFM2's (and Qwen3's) templates render the equivalent conversation.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "formats/lfm2_synth.h"
#include "chat/chat_template.h"
#include "chat/hf_chat_template.h"
#include "server/chat_messages.h"
#include "server/chat_prompt.h"

using namespace ember;
using ojson = nlohmann::ordered_json;

namespace {

std::string fixture(const std::string& rel) { return std::string(EMBER_SOURCE_DIR) + "/tests/fixtures/chat_templates/" + rel; }

const ojson& goldens() {
  static const ojson g = [] {
    std::ifstream in(fixture("goldens.json"));
    std::stringstream s;
    s << in.rdbuf();
    return ojson::parse(s.str());
  }();
  return g;
}

std::string golden(const std::string& config, const std::string& conversation, bool gen) {
  for (const auto& c : goldens()["cases"])
    if (c["config"] == config && c["conversation"] == conversation && c["add_generation_prompt"] == gen) return c["rendered"];
  ADD_FAILURE() << "no golden for " << config << " / " << conversation;
  return "";
}

// The golden conversation lfm2_tool_round_trip as an OpenAI client sends it.
const ojson kOpenAiRoundTrip = ojson::parse(R"([
  {"role": "system", "content": "You are a weather bot."},
  {"role": "user", "content": "Weather in Paris for 2 days, and 1.5 + 2?"},
  {"role": "assistant", "content": "Checking.", "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}},
    {"id": "call_2", "type": "function", "function": {"name": "math.add", "arguments": "{\"a\": 1.5, \"b\": 2}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 21, \"sky\": \"clear\"}"},
  {"role": "tool", "tool_call_id": "call_2", "content": "3.5"}])");

}  // namespace

TEST(ToolTemplate, SynthWritesTheGoldensTemplate) {
  std::ifstream in(fixture("lfm2.tokenizer_config.json"));
  EXPECT_EQ(nlohmann::json::parse(in), nlohmann::json::parse(formats::lfm2_tokenizer_config_json()));
}

TEST(ToolTemplate, Lfm2TemplateMatchesJinja2WithTools) {
  size_t n = 0;
  for (const auto& c : goldens()["cases"]) {
    if (c["config"] != "lfm2.tokenizer_config.json") continue;
    SCOPED_TRACE(c["conversation"].get<std::string>());
    ojson tools = c.contains("tools") ? goldens()["tools"][c["tools"].get<std::string>()] : ojson::array();
    const auto& messages = goldens()["conversations"][c["conversation"].get<std::string>()];
    EXPECT_EQ(server::ChatPrompt::lfm2().render(messages, tools, c["add_generation_prompt"]), c["rendered"].get<std::string>());
    n++;
  }
  EXPECT_GE(n, 14u);
}

TEST(ToolTemplate, BuiltInRendererAgreesOnPlainConversations) {
  for (const char* conv : {"system_user", "multi_turn", "no_system", "thinking"}) {
    std::vector<llm::ChatMessage> msgs;
    for (const auto& m : goldens()["conversations"][conv]) msgs.push_back({m["role"], m["content"]});
    EXPECT_EQ(llm::render_lfm2_chat(msgs, true), golden("lfm2.tokenizer_config.json", conv, true)) << conv;
  }
}

TEST(ToolTemplate, OpenAiToolTurnsRenderAsLfm2Writes) {
  const auto& prompt = server::ChatPrompt::lfm2();
  EXPECT_FALSE(prompt.renders_tool_calls());
  ojson messages = server::parse_chat_messages(kOpenAiRoundTrip, prompt.renders_tool_calls());
  EXPECT_EQ(prompt.render(messages, goldens()["tools"]["weather"], true), golden("lfm2.tokenizer_config.json", "lfm2_tool_round_trip", true));
  EXPECT_EQ(prompt.render(messages, goldens()["tools"]["weather"], false), golden("lfm2.tokenizer_config.json", "lfm2_tool_round_trip", false));
}

TEST(ToolTemplate, TemplatesThatReadToolCallsGetThem) {
  auto qwen = llm::HfChatTemplate::from_config_file(fixture("qwen3.tokenizer_config.json"));
  ojson openai = ojson::parse(R"([{"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\": 21}"}])");
  ojson messages = server::parse_chat_messages(openai, /*template_renders_tool_calls=*/true);
  EXPECT_EQ(qwen.render(messages, true, ojson{{"tools", goldens()["tools"]["weather"]}}), golden("qwen3.tokenizer_config.json", "qwen3_tool_calls", true));
}
