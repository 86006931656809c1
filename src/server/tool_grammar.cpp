#include "server/tool_grammar.h"

#include <cstdio>
#include <vector>

#include "server/tool_calls.h"

namespace ember::server {
namespace {

using ojson = nlohmann::ordered_json;

// Schemas nest; beyond this depth a value is any literal (bounds the grammar's size).
constexpr int kMaxSchemaDepth = 16;

std::string literal(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

class Builder {
 public:
  std::string text() const {
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

  std::string add(const std::string& hint, const std::string& body) {
    std::string name = hint + "-" + std::to_string(rules_.size());
    rules_.emplace_back(name, body);
    return name;
  }
  void root(const std::string& body) { rules_.insert(rules_.begin(), {"root", body}); }

  // Shared rules for literal kinds, added once.
  std::string common(const std::string& name) {
    for (const auto& [n, b] : rules_)
      if (n == name) return name;
    if (name == "string") {
      rules_.emplace_back("string", "\"\\\"\" string-char* \"\\\"\"");
      rules_.emplace_back("string-char", "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})");
    } else if (name == "integer") {
      rules_.emplace_back("integer", "\"-\"? ([0-9] | [1-9] [0-9]{1,15})");
    } else if (name == "number") {
      common("integer");
      rules_.emplace_back("number", "integer (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?");
    } else if (name == "value") {
      common("string");
      common("number");
      rules_.emplace_back("value", "string | number | \"True\" | \"False\" | \"None\" | value-list | value-dict");
      rules_.emplace_back("value-list", "\"[\" (value (\", \" value)*)? \"]\"");
      rules_.emplace_back("value-dict", "\"{\" (string \": \" value (\", \" string \": \" value)*)? \"}\"");
    }
    return name;
  }

  // A rule (or inline expression) for values of `schema`.
  std::string value(const ojson& schema, int depth) {
    if (!schema.is_object() || depth > kMaxSchemaDepth) return common("value");
    if (auto it = schema.find("const"); it != schema.end()) return literal(python_literal(*it));
    if (auto it = schema.find("enum"); it != schema.end() && it->is_array() && !it->empty()) {
      std::string alts;
      for (const auto& v : *it) alts += std::string(alts.empty() ? "" : " | ") + literal(python_literal(v));
      return "(" + alts + ")";
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (auto it = schema.find(key); it != schema.end() && it->is_array() && !it->empty()) {
        std::string alts;
        for (const auto& s : *it) alts += std::string(alts.empty() ? "" : " | ") + value(s, depth + 1);
        return "(" + alts + ")";
      }
    auto type = schema.find("type");
    if (type == schema.end()) return common("value");
    if (type->is_array()) {
      std::string alts;
      for (const auto& t : *type) {
        ojson one = schema;
        one["type"] = t;
        alts += std::string(alts.empty() ? "" : " | ") + value(one, depth + 1);
      }
      return alts.empty() ? common("value") : "(" + alts + ")";
    }
    if (!type->is_string()) return common("value");
    const std::string t = type->get<std::string>();
    if (t == "string") return common("string");
    if (t == "integer") return common("integer");
    if (t == "number") return common("number");
    if (t == "boolean") return "(\"True\" | \"False\")";
    if (t == "null") return "\"None\"";
    if (t == "array") {
      const std::string item = value(schema.value("items", ojson::object()), depth + 1);
      return add("list", "\"[\" (" + item + " (\", \" " + item + ")*)? \"]\"");
    }
    if (t == "object") {
      auto props = schema.find("properties");
      if (props == schema.end() || !props->is_object() || props->empty()) {
        common("value");
        return "value-dict";
      }
      return add("dict", "\"{\" " + members(*props, schema, depth, /*keyword=*/false) + " \"}\"");
    }
    return common("value");
  }

  // Properties in order, required ones always, others optionally, ", " between: as keyword
  // arguments (key=value) or dict members ("key": value). Empty when there are none.
  std::string members(const ojson& props, const ojson& schema, int depth, bool keyword) {
    std::vector<std::string> items;
    std::vector<bool> required;
    const ojson req = schema.value("required", ojson::array());
    for (const auto& [key, sub] : props.items()) {
      const std::string head = keyword ? literal(key + "=") : literal(ojson(key).dump() + ": ");
      items.push_back(head + " " + value(sub, depth + 1));
      bool r = false;
      for (const auto& x : req) r |= x.is_string() && x.get<std::string>() == key;
      required.push_back(r);
    }
    if (items.empty()) return "";
    // tail(k): items k.. each with a leading ", "; first(k): items k.., at least one, no leading ", ".
    auto tail = [&](size_t k) {
      std::string out;
      for (size_t j = k; j < items.size(); j++) out += required[j] ? " \", \" " + items[j] : " (\", \" " + items[j] + ")?";
      return out;
    };
    std::string next;  // first(k + 1)
    for (size_t k = items.size(); k-- > 0;) {
      std::string body = items[k] + tail(k + 1);
      if (!required[k] && !next.empty()) body += " | " + next;
      next = add("args", body);
    }
    bool any_required = false;
    for (bool r : required) any_required |= r;
    return any_required ? next : next + "?";
  }

 private:
  std::vector<std::pair<std::string, std::string>> rules_;
};

}  // namespace

std::string tool_call_grammar(const ToolRequest& request) {
  Builder b;
  std::string calls;
  for (const auto& fn : request.functions) {
    const std::string name = fn["name"].get<std::string>();
    if (request.choice == ToolChoice::Named && name != request.forced) continue;
    const ojson params = fn.value("parameters", ojson::object());
    const ojson props = params.value("properties", ojson::object());
    const std::string args = props.is_object() ? b.members(props, params, 0, /*keyword=*/true) : "";
    calls += std::string(calls.empty() ? "" : " | ") + b.add("call", literal(name + "(") + (args.empty() ? "" : " " + args) + " \")\"");
  }
  const std::string call = b.add("calls", calls);
  b.root(request.parallel && request.choice != ToolChoice::Named ? "\"[\" " + call + " (\", \" " + call + ")* \"]\"" : "\"[\" " + call + " \"]\"");
  return b.text();
}

void apply_tool_request(const ToolRequest& request, const llm::Tokenizer& tokenizer, JobRequest& job) {
  const std::vector<uint32_t> markers = tool_marker_ids(tokenizer);
  if (request.offered()) job.shown_special = markers;
  if (request.forced_call()) {
    const auto start = tokenizer.token_to_id(std::string(kToolCallStart));
    if (start && tokenizer.is_special(*start)) job.prompt.push_back(*start);
    else for (uint32_t id : tokenizer.encode(std::string(kToolCallStart), false)) job.prompt.push_back(id);
    job.grammar = tool_call_grammar(request);
  }
  if (request.choice == ToolChoice::None && !request.functions.empty() && !markers.empty())
    job.logit_bias.emplace_back(markers[0], -100.0f);
}

}  // namespace ember::server
