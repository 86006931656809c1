// ember's Jinja interpreter against jinja2 (goldens from tools/golden/make_chat_template_goldens.py):
// the chat templates of Qwen3, Llama 3.1, DeepSeek V3 and Gemma (real tokenizer_config.json
// files) and ember's feature template, over four conversations, with and without the
// generation prompt; raise_exception; syntax errors; the CLI.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "chat/hf_chat_template.h"
#include "chat/jinja/template.h"
#include "ember_binary.h"

using namespace ember;

namespace {

std::string fixture(const std::string& rel) { return std::string(EMBER_SOURCE_DIR) + "/tests/fixtures/chat_templates/" + rel; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string render(const std::string& source, const nlohmann::json& context) { return llm::jinja::Template(source).render(context); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(ChatTemplateGoldens, RealFamiliesMatchJinja2) {
  // Ordered: tools and messages keep the key order jinja2 saw (tojson writes dicts in that order).
  auto golden = nlohmann::ordered_json::parse(read_file(fixture("goldens.json")));
  size_t rendered = 0, raised = 0;
  std::set<std::string> families;
  for (const auto& c : golden["cases"]) {
    std::string config = c["config"];
    SCOPED_TRACE(config + " / " + c["conversation"].get<std::string>() + (c["add_generation_prompt"].get<bool>() ? " +gen" : ""));
    auto tmpl = llm::HfChatTemplate::from_config_file(fixture(config));
    const auto& messages = golden["conversations"][c["conversation"].get<std::string>()];
    bool gen = c["add_generation_prompt"];
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    if (c.contains("tools")) extra["tools"] = golden["tools"][c["tools"].get<std::string>()];
    if (c.contains("error")) {
      std::string e = error_of([&] { tmpl.render(messages, gen, extra); });
      EXPECT_NE(e.find(c["error"].get<std::string>()), std::string::npos) << e;
      raised++;
    } else {
      EXPECT_EQ(tmpl.render(messages, gen, extra), c["rendered"].get<std::string>());
      rendered++;
    }
    families.insert(config);
  }
  EXPECT_EQ(families.size(), 6u);
  EXPECT_GT(raised, 0u);
  EXPECT_GE(rendered, 30u);
}

TEST(ChatTemplateJinja, WhitespaceControl) {
  nlohmann::json ctx = {{"x", "X"}};
  EXPECT_EQ(render("a  {{- x -}}  b", ctx), "aXb");
  // trim_blocks drops the newline after a block tag, lstrip_blocks the indentation before one.
  EXPECT_EQ(render("{% if true %}\n  yes\n  {% endif %}\nend", ctx), "  yes\nend");
  EXPECT_EQ(render("{%+ if true %}x{% endif +%}\ny", ctx), "x\ny");
  EXPECT_EQ(render("a {# comment #} b\n", ctx), "a  b");  // one trailing newline dropped
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}", ctx), "{{ x }}");
}

TEST(ChatTemplateJinja, ExpressionsAndScoping) {
  nlohmann::json ctx = {{"items", {1, 2, 3}}, {"d", {{"k", "v"}}}, {"s", "Hello"}};
  EXPECT_EQ(render("{{ items | length }} {{ items[-1] }} {{ items[1:] }} {{ s[::-1] }} {{ d.k }}{{ d['k'] }}", ctx), "3 3 [2, 3] olleH vv");
  EXPECT_EQ(render("{% set y = 1 %}{% for i in items %}{% set y = i %}{% endfor %}{{ y }}", ctx), "1");
  EXPECT_EQ(render("{% set ns = namespace(y=1) %}{% for i in items %}{% set ns.y = i %}{% endfor %}{{ ns.y }}", ctx), "3");
  EXPECT_EQ(render("{{ 'yes' if s.startswith('He') else 'no' }} {{ s is string }} {{ none }} {{ true }}", ctx), "yes True None True");
  EXPECT_EQ(render("{{ undefined_thing }}|{{ undefined_thing is defined }}", ctx), "|False");
}

TEST(ChatTemplateJinja, ErrorsNameTheProblem) {
  std::string e = error_of([] { render("{{ raise_exception('roles must alternate') }}", {}); });
  EXPECT_NE(e.find("roles must alternate"), std::string::npos) << e;
  e = error_of([] { render("a\n{% frobnicate %}", {}); });
  EXPECT_NE(e.find("frobnicate"), std::string::npos) << e;
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(error_of([] { render("{% if x %}", {}); }).find("endif"), std::string::npos);
  EXPECT_NE(error_of([] { render("{{ x | nosuchfilter }}", {}); }).find("nosuchfilter"), std::string::npos);
  EXPECT_NE(error_of([] { render("{{ 'a' + 1 }}", {}); }).find("unsupported operands"), std::string::npos);
  EXPECT_THROW(llm::HfChatTemplate::from_config_json({{"bos_token", "<s>"}}, "cfg.json"), Error);
}

TEST(ChatTemplateCli, RendersFromConfig) {
  std::string messages = (std::filesystem::temp_directory_path() / ("ember_chat_messages_" + std::to_string(getpid()) + ".json")).string();
  {
    std::ofstream out(messages);
    out << R"([{"role":"system","content":"S"},{"role":"user","content":"U"}])";
  }
  auto run = [](const std::string& cmd, int& status) {
    std::string out;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    status = pclose(p);
    return out;
  };
  int status = 0;
  std::string out = run(ember::test::ember_binary() + " chat-template --tokenizer-config " + fixture("qwen3.tokenizer_config.json") +
                            " --messages " + messages + " --add-generation-prompt",
                        status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
  out = run(ember::test::ember_binary() + " chat-template --tokenizer-config " + fixture("gemma.tokenizer_config.json") + " --messages " + messages, status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("System role not supported"), std::string::npos) << out;
  // A model directory without a template: LFM2's built-in one; with chat_template.jinja: that file.
  std::string dir = std::filesystem::temp_directory_path() / ("ember_chat_model_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tokenizer_config.json") << R"({"bos_token": "<s>"})";
  out = run(ember::test::ember_binary() + " chat-template --model " + dir + " --messages " + messages, status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("<|startoftext|><|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"), std::string::npos) << out;
  std::ofstream(dir + "/chat_template.jinja") << "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{% endfor %}";
  out = run(ember::test::ember_binary() + " chat-template --model " + dir + " --messages " + messages, status);
  EXPECT_EQ(out, "<s>[system][user]");
  std::filesystem::remove_all(dir);
  std::remove(messages.c_str());
}
