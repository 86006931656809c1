#include "server/tool_request.h"

#include <set>

#include "server/api_error.h"
#include "server/tool_calls.h"

namespace ember::server {
namespace {

using ojson = nlohmann::ordered_json;

const ojson* field(const ojson& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void bad(const std::string& message, const std::string& param, const std::string& code = "invalid_value") {
  throw ApiError::bad_request(message, param, code);
}

[[noreturn]] void wrong_type(const std::string& param, const std::string& want) {
  bad("'" + param + "' must be " + want, param, "invalid_type");
}

void refuse_unknown(const ojson& obj, const std::set<std::string>& known, const std::string& at) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (!known.count(it.key()))
      bad("unrecognized argument '" + it.key() + "' in '" + at + "'", at + "." + it.key(), "unknown_parameter");
}

// OpenAI's rule (letters, digits, '_' and '-', at most 64), and '.' for LFM2's dotted names.
bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

ojson parse_function(const ojson& tool, const std::string& at) {
  if (!tool.is_object()) wrong_type(at, "an object");
  refuse_unknown(tool, {"type", "function"}, at);
  const ojson* type = field(tool, "type");
  if (!type) bad("'" + at + ".type' is required", at + ".type", "missing_required_parameter");
  if (*type != "function") bad("'" + at + ".type' must be \"function\"", at + ".type");
  const ojson* fn = field(tool, "function");
  const std::string fat = at + ".function";
  if (!fn) bad("'" + fat + "' is required", fat, "missing_required_parameter");
  if (!fn->is_object()) wrong_type(fat, "an object");
  refuse_unknown(*fn, {"name", "description", "parameters", "strict"}, fat);
  const ojson* name = field(*fn, "name");
  if (!name) bad("'" + fat + ".name' is required", fat + ".name", "missing_required_parameter");
  if (!name->is_string()) wrong_type(fat + ".name", "a string");
  if (!valid_name(name->get<std::string>()))
    bad("'" + fat + ".name' must be 1 to 64 letters, digits, '_', '-' or '.'", fat + ".name");
  if (const ojson* d = field(*fn, "description"); d && !d->is_string()) wrong_type(fat + ".description", "a string");
  if (const ojson* s = field(*fn, "strict"); s && !s->is_boolean()) wrong_type(fat + ".strict", "a boolean");
  if (const ojson* p = field(*fn, "parameters")) {
    const std::string pat = fat + ".parameters";
    if (!p->is_object()) wrong_type(pat, "a JSON schema object");
    if (const ojson* t = field(*p, "type"); t && *t != "object") bad("'" + pat + ".type' must be \"object\" (arguments are keyword arguments)", pat + ".type");
    if (const ojson* props = field(*p, "properties"); props && !props->is_object()) wrong_type(pat + ".properties", "an object");
    if (const ojson* req = field(*p, "required")) {
      if (!req->is_array()) wrong_type(pat + ".required", "an array of strings");
      for (const auto& r : *req)
        if (!r.is_string()) wrong_type(pat + ".required", "an array of strings");
    }
  }
  ojson out = ojson::object();
  for (const auto& [k, v] : fn->items())
    if (k != "strict" && !v.is_null()) out[k] = v;
  return out;
}

}  // namespace

ToolRequest parse_tool_request(const ojson& body) {
  ToolRequest r;
  std::set<std::string> names;
  if (const ojson* tools = field(body, "tools")) {
    if (!tools->is_array()) wrong_type("tools", "an array");
    if (tools->size() > 128) bad("'tools' holds at most 128 functions, got " + std::to_string(tools->size()), "tools");
    for (size_t i = 0; i < tools->size(); i++) {
      const std::string at = "tools[" + std::to_string(i) + "]";
      ojson fn = parse_function((*tools)[i], at);
      if (!names.insert(fn["name"].get<std::string>()).second)
        bad("'" + at + ".function.name' repeats the name '" + fn["name"].get<std::string>() + "'", at + ".function.name");
      r.functions.push_back(std::move(fn));
    }
  }
  r.choice = names.empty() ? ToolChoice::None : ToolChoice::Auto;
  if (const ojson* c = field(body, "tool_choice")) {
    if (c->is_string()) {
      const std::string s = c->get<std::string>();
      if (s == "none") r.choice = ToolChoice::None;
      else if (s == "auto") r.choice = names.empty() ? ToolChoice::None : ToolChoice::Auto;
      else if (s == "required") r.choice = ToolChoice::Required;
      else bad("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}", "tool_choice");
    } else if (c->is_object()) {
      refuse_unknown(*c, {"type", "function"}, "tool_choice");
      if (c->value("type", ojson()) != "function") bad("'tool_choice.type' must be \"function\"", "tool_choice.type");
      const ojson* fn = field(*c, "function");
      if (!fn || !fn->is_object()) bad("'tool_choice.function' must be {\"name\": ...}", "tool_choice.function");
      refuse_unknown(*fn, {"name"}, "tool_choice.function");
      const ojson* name = field(*fn, "name");
      if (!name || !name->is_string()) bad("'tool_choice.function.name' must be a string", "tool_choice.function.name");
      r.forced = name->get<std::string>();
      if (!names.count(r.forced))
        bad("'tool_choice' names the function '" + r.forced + "', which is not in 'tools'", "tool_choice.function.name");
      r.choice = ToolChoice::Named;
    } else {
      wrong_type("tool_choice", "a string or an object");
    }
    if (r.choice == ToolChoice::Required && names.empty()) bad("'tool_choice' \"required\" needs 'tools'", "tool_choice");
  }
  if (const ojson* p = field(body, "parallel_tool_calls")) {
    if (!p->is_boolean()) wrong_type("parallel_tool_calls", "a boolean");
    r.parallel = p->get<bool>();
  }
  return r;
}

std::vector<uint32_t> tool_marker_ids(const llm::Tokenizer& tokenizer) {
  std::vector<uint32_t> out;
  for (std::string_view marker : {kToolCallStart, kToolCallEnd})
    if (auto id = tokenizer.token_to_id(std::string(marker)); id && tokenizer.is_special(*id)) out.push_back(*id);
  return out;
}

}  // namespace ember::server
