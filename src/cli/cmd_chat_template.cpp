// `ember chat-template`: renders a model's chat template over a messages file, to see exactly
// the prompt ember would tokenize. Without a template in the model directory, LFM2's built-in
// template is used (and said so on stderr).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/error.h"
#include "chat/chat_template.h"
#include "chat/hf_chat_template.h"

namespace ember::cli {

namespace {

nlohmann::json read_messages(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open the messages file", path, "pass a JSON list of {\"role\", \"content\"} objects");
  std::stringstream s;
  s << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(s.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("not valid JSON: ") + e.what(), path);
  }
  if (j.is_object() && j.contains("messages")) j = j["messages"];
  if (!j.is_array()) throw Error("messages must be a JSON list", path, "write [{\"role\": \"user\", \"content\": \"Hi\"}, ...]");
  for (size_t i = 0; i < j.size(); i++)
    if (!j[i].is_object() || !j[i].contains("role") || !j[i]["role"].is_string())
      throw Error("message has no \"role\" string", path + ": [" + std::to_string(i) + "]");
  return j;
}

}  // namespace

void add_chat_template_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat-template", "render a chat template (tokenizer_config.json) over a messages file");
  auto config = std::make_shared<std::string>();
  auto model_dir = std::make_shared<std::string>();
  auto messages_path = std::make_shared<std::string>();
  auto add_generation_prompt = std::make_shared<bool>(false);
  auto* c = cmd->add_option("--tokenizer-config", *config, "a Hugging Face tokenizer_config.json with a chat_template");
  auto* m = cmd->add_option("--model", *model_dir, "a model directory (chat_template.jinja or tokenizer_config.json)");
  c->excludes(m);
  m->excludes(c);
  cmd->add_option("--messages", *messages_path, "a JSON list of {\"role\", \"content\"} messages")->required();
  cmd->add_flag("--add-generation-prompt", *add_generation_prompt, "end with the assistant's turn opener");
  cmd->callback([=] {
    if (config->empty() && model_dir->empty())
      throw Error("no chat template given", "command line", "pass --tokenizer-config FILE or --model DIR");
    nlohmann::json messages = read_messages(*messages_path);
    std::string out;
    std::unique_ptr<llm::HfChatTemplate> tmpl;
    if (!config->empty()) {
      tmpl = std::make_unique<llm::HfChatTemplate>(llm::HfChatTemplate::from_config_file(*config));
    } else if (!llm::HfChatTemplate::find_in_model_dir(*model_dir, tmpl)) {
      std::fprintf(stderr, "%s has no chat template: using LFM2's built-in template\n", model_dir->c_str());
      std::vector<llm::ChatMessage> msgs;
      for (const auto& j : messages) msgs.push_back({j["role"].get<std::string>(), j.value("content", "")});
      out = llm::render_lfm2_chat(msgs, *add_generation_prompt);
    }
    if (tmpl) out = tmpl->render(messages, *add_generation_prompt);
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
}

}  // namespace ember::cli
