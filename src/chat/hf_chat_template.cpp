#include "chat/hf_chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace ember::llm {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open file", path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json parse_json(const std::string& path) {
  try {
    return nlohmann::json::parse(read_text(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("not valid JSON: ") + e.what(), path, "pass a Hugging Face tokenizer_config.json");
  }
}

nlohmann::json special_tokens(const nlohmann::json& config) {
  nlohmann::json out = nlohmann::json::object();
  if (!config.is_object()) return out;
  for (const auto& [key, value] : config.items()) {
    if (!key.ends_with("_token")) continue;
    if (value.is_string()) out[key] = value;
    else if (value.is_object() && value.contains("content") && value["content"].is_string()) out[key] = value["content"];
  }
  return out;
}

jinja::Template compile(const std::string& source, const std::string& origin) {
  try {
    return jinja::Template(source);
  } catch (const Error& e) {
    throw Error(e.problem(), origin + ": chat_template: " + e.where(), e.fix());
  }
}

}  // namespace

HfChatTemplate HfChatTemplate::from_config_file(const std::string& path) { return from_config_json(parse_json(path), path); }

HfChatTemplate HfChatTemplate::from_config_json(const nlohmann::json& config, const std::string& origin) {
  if (!config.is_object() || !config.contains("chat_template"))
    throw Error("no \"chat_template\" in the tokenizer config", origin, "pass a tokenizer_config.json that has one");
  const auto& t = config["chat_template"];
  std::string source;
  if (t.is_string()) {
    source = t.get<std::string>();
  } else if (t.is_array()) {
    // Named templates: [{"name": "default", "template": "..."}, ...]
    for (const auto& entry : t)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template")) source = entry["template"].get<std::string>();
    if (source.empty()) throw Error("chat_template list has no \"default\" entry", origin);
  } else {
    throw Error("chat_template is neither a string nor a list of named templates", origin);
  }
  return HfChatTemplate(compile(source, origin), special_tokens(config), source);
}

HfChatTemplate HfChatTemplate::from_source(const std::string& source, const nlohmann::json& tokens, const std::string& origin) {
  return HfChatTemplate(compile(source, origin), special_tokens(tokens), source);
}

bool HfChatTemplate::find_in_model_dir(const std::string& dir, std::unique_ptr<HfChatTemplate>& out) {
  namespace fs = std::filesystem;
  std::string config_path = (fs::path(dir) / "tokenizer_config.json").string();
  nlohmann::json config = fs::exists(config_path) ? parse_json(config_path) : nlohmann::json::object();
  std::string jinja_path = (fs::path(dir) / "chat_template.jinja").string();
  if (fs::exists(jinja_path)) {
    std::string source = read_text(jinja_path);
    out.reset(new HfChatTemplate(compile(source, jinja_path), special_tokens(config), source));
    return true;
  }
  if (!config.contains("chat_template")) return false;
  out.reset(new HfChatTemplate(from_config_json(config, config_path)));
  return true;
}

std::string HfChatTemplate::render(const nlohmann::json& messages, bool add_generation_prompt, const nlohmann::json& extra) const {
  nlohmann::json context = tokens_;
  if (extra.is_object())
    for (const auto& [k, v] : extra.items()) context[k] = v;
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  return template_.render(context);
}

std::string HfChatTemplate::render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                   const nlohmann::ordered_json& extra) const {
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  for (const auto& [k, v] : tokens_.items()) context[k] = v.get<std::string>();
  if (extra.is_object())
    for (const auto& [k, v] : extra.items()) context[k] = v;
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  return template_.render(context);
}

}  // namespace ember::llm
