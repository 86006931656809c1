#include "server/chat_messages.h"

#include <set>

#include "server/api_error.h"
#include "server/tool_calls.h"

namespace ember::server {
namespace {

using ojson = nlohmann::ordered_json;

std::string type_name(const ojson& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

[[noreturn]] void wrong_type(const std::string& param, const std::string& want, const ojson& got) {
  throw ApiError::bad_request("'" + param + "' must be " + want + ", got " + type_name(got), param, "invalid_type");
}

const ojson* field(const ojson& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string text_content(const ojson& c, const std::string& at) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) wrong_type(at, "a string or an array of text parts", c);
  std::string out;
  for (const auto& part : c) {  // content parts: only text
    if (!part.is_object() || part.value("type", ojson()) != "text" || !part.contains("text") || !part["text"].is_string())
      throw ApiError::bad_request("'" + at + "' parts must be {\"type\": \"text\", \"text\": \"...\"}", at);
    out += part["text"].get<std::string>();
  }
  return out;
}

// An assistant turn's tool_calls: checked, with each call's arguments parsed.
std::vector<ToolCall> parse_tool_calls(const ojson& calls, const std::string& at) {
  if (!calls.is_array()) wrong_type(at, "an array", calls);
  std::vector<ToolCall> out;
  for (size_t j = 0; j < calls.size(); j++) {
    const ojson& c = calls[j];
    const std::string cat = at + "[" + std::to_string(j) + "]";
    if (!c.is_object()) wrong_type(cat, "an object", c);
    for (auto it = c.begin(); it != c.end(); ++it)
      if (it.key() != "id" && it.key() != "type" && it.key() != "function")
        throw ApiError::bad_request("unrecognized argument '" + it.key() + "' in '" + cat + "'", cat + "." + it.key(), "unknown_parameter");
    if (const ojson* id = field(c, "id"); id && !id->is_string()) wrong_type(cat + ".id", "a string", *id);
    if (const ojson* type = field(c, "type"); type && *type != "function")
      throw ApiError::bad_request("'" + cat + ".type' must be \"function\"", cat + ".type");
    const ojson* fn = field(c, "function");
    if (!fn) throw ApiError::bad_request("'" + cat + ".function' is required", cat + ".function", "missing_required_parameter");
    if (!fn->is_object()) wrong_type(cat + ".function", "an object", *fn);
    const ojson* name = field(*fn, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty())
      throw ApiError::bad_request("'" + cat + ".function.name' must be a non-empty string", cat + ".function.name");
    ToolCall call{name->get<std::string>()};
    if (const ojson* args = field(*fn, "arguments")) {
      const std::string aat = cat + ".function.arguments";
      if (args->is_string()) {
        call.arguments = ojson::parse(args->get<std::string>(), nullptr, false);
        if (call.arguments.is_discarded() || !call.arguments.is_object())
          throw ApiError::bad_request("'" + aat + "' must be the JSON text of an object", aat);
      } else if (args->is_object()) {
        call.arguments = *args;
      } else {
        wrong_type(aat, "a JSON string", *args);
      }
    }
    out.push_back(std::move(call));
  }
  return out;
}

}  // namespace

ojson parse_chat_messages(const ojson& msgs, bool template_renders_tool_calls) {
  ojson out = ojson::array();
  for (size_t i = 0; i < msgs.size(); i++) {
    const ojson& m = msgs[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) wrong_type(at, "an object", m);
    static const std::set<std::string> kKnown = {"role", "content", "name", "tool_calls", "tool_call_id", "refusal"};
    for (auto it = m.begin(); it != m.end(); ++it)
      if (!kKnown.count(it.key()))
        throw ApiError::bad_request("unrecognized request argument supplied: '" + it.key() + "' in " + at, it.key(), "unknown_parameter");
    const ojson* role = field(m, "role");
    if (!role) throw ApiError::bad_request("'" + at + ".role' is required", at + ".role", "missing_required_parameter");
    if (!role->is_string()) wrong_type(at + ".role", "a string", *role);
    std::string rs = role->get<std::string>();
    if (rs == "developer") rs = "system";  // OpenAI's newer name for the system role
    if (rs != "system" && rs != "user" && rs != "assistant" && rs != "tool")
      throw ApiError::bad_request("'" + at + ".role' must be system, developer, user, assistant or tool", at + ".role");
    const ojson* calls = field(m, "tool_calls");
    if (calls && rs != "assistant")
      throw ApiError::bad_request("'" + at + ".tool_calls' belongs to assistant messages", at + ".tool_calls");
    const ojson* call_id = field(m, "tool_call_id");
    if (rs == "tool") {
      if (!call_id) throw ApiError::bad_request("'" + at + ".tool_call_id' is required in a tool message", at + ".tool_call_id", "missing_required_parameter");
      if (!call_id->is_string()) wrong_type(at + ".tool_call_id", "a string", *call_id);
    } else if (call_id) {
      throw ApiError::bad_request("'" + at + ".tool_call_id' belongs to tool messages", at + ".tool_call_id");
    }
    const ojson* c = field(m, "content");
    if (!c && !(calls && !calls->empty()))
      throw ApiError::bad_request("'" + at + ".content' is required", at + ".content", "missing_required_parameter");
    std::string content = c ? text_content(*c, at + ".content") : "";
    ojson msg = {{"role", rs}, {"content", content}};
    if (calls) {
      std::vector<ToolCall> parsed = parse_tool_calls(*calls, at + ".tool_calls");
      if (!parsed.empty() && template_renders_tool_calls) {
        ojson list = ojson::array();
        for (size_t j = 0; j < parsed.size(); j++) {
          const ojson& given = (*calls)[j];
          ojson tc = {{"type", "function"}, {"function", {{"name", parsed[j].name}, {"arguments", parsed[j].arguments}}}};
          if (const ojson* id = field(given, "id")) tc["id"] = *id;
          list.push_back(std::move(tc));
        }
        if (!c) msg["content"] = nullptr;
        msg["tool_calls"] = std::move(list);
      } else if (!parsed.empty()) {
        msg["content"] = std::string(kToolCallStart) + format_lfm2_calls(parsed) + std::string(kToolCallEnd) + content;
      }
    }
    if (call_id) msg["tool_call_id"] = *call_id;
    if (const ojson* name = field(m, "name")) {
      if (!name->is_string()) wrong_type(at + ".name", "a string", *name);
      msg["name"] = *name;
    }
    out.push_back(std::move(msg));
  }
  return out;
}

}  // namespace ember::server
