#include "llm/grammar/json_schema.h"

#include <cstdio>
#include <map>
#include <set>

namespace ember::llm::grammar {
namespace {

using ojson = nlohmann::ordered_json;

// The JSON grammar's shared rules. Whitespace: nothing, one space, or one newline and up to 12
// spaces or tabs of indentation (pretty-printed output, bounded).
const char* kBase = R"(ws ::= ( " " | "\n" [ \t]{0,12} )?
json-string ::= "\"" json-char* "\""
json-char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
json-number ::= json-integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-member ::= json-string ws ":" ws json-value ws
json-object ::= "{" ws ( json-member ( "," ws json-member )* )? "}"
json-array ::= "[" ws ( json-value ws ( "," ws json-value ws )* )? "]"
)";

// Keywords that only annotate: accepted and ignored.
const std::set<std::string> kAnnotations = {"title", "description", "$schema", "$id", "$comment", "default", "examples", "deprecated",
                                            "readOnly", "writeOnly"};
const std::set<std::string> kSupported = {"type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
                                          "oneOf", "minItems", "maxItems", "minLength", "maxLength", "$ref", "$defs", "definitions"};

// A GBNF literal for `bytes`.
std::string literal(const std::string& bytes) {
  std::string out = "\"";
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

class Compiler {
 public:
  explicit Compiler(const ojson& root) : root_(root) {}

  std::string run() {
    const std::string top = visit(root_, "");
    return "root ::= " + top + "\n" + rules_ + kBase;
  }

 private:
  const ojson& root_;
  std::string rules_;
  uint32_t counter_ = 0;
  std::map<std::string, std::string> refs_;  // $ref target -> its rule

  [[noreturn]] static void refuse(const std::string& what, const std::string& keyword, const std::string& path) {
    throw SchemaError("the JSON schema " + what + " (at '" + (path.empty() ? "/" : path) + "')", keyword, path.empty() ? "/" : path);
  }

  std::string rule(const std::string& body) {
    const std::string name = std::string("s") += std::to_string(counter_++);
    rules_ += name + " ::= " + body + "\n";
    return name;
  }

  static uint32_t count(const ojson& s, const char* key, uint32_t fallback, const std::string& path) {
    auto it = s.find(key);
    if (it == s.end()) return fallback;
    if (!it->is_number_unsigned() || it->get<uint64_t>() > 1000)
      refuse("keyword '" + std::string(key) + "' must be an integer in 0..1000", key, path + "/" + key);
    return static_cast<uint32_t>(it->get<uint64_t>());
  }

  std::string visit(const ojson& s, const std::string& path) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return "json-value";
      refuse("is false, which no value satisfies", "schema", path);
    }
    if (!s.is_object()) refuse("must be an object or a boolean", "schema", path);
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!kSupported.count(it.key()) && !kAnnotations.count(it.key()))
        refuse("uses keyword '" + it.key() + "', which constrained decoding does not support (see docs/structured-output.md)", it.key(),
               path + "/" + it.key());
    if (auto it = s.find("$ref"); it != s.end()) return reference(*it, path + "/$ref");
    if (auto it = s.find("const"); it != s.end()) return literal(it->dump());
    if (auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) refuse("keyword 'enum' must be a non-empty array", "enum", path + "/enum");
      std::string body;
      for (const auto& v : *it) body += (body.empty() ? "" : " | ") + literal(v.dump());
      return "( " + body + " )";
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (auto it = s.find(key); it != s.end()) {
        if (!it->is_array() || it->empty()) refuse("keyword '" + std::string(key) + "' must be a non-empty array", key, path + "/" + key);
        std::string body;
        for (size_t i = 0; i < it->size(); i++)
          body += (i ? " | " : "") + visit((*it)[i], path + "/" + key + "/" + std::to_string(i));
        return "( " + body + " )";
      }
    std::vector<std::string> types;
    if (auto it = s.find("type"); it != s.end()) {
      if (it->is_string()) types.push_back(it->get<std::string>());
      else if (it->is_array() && !it->empty())
        for (const auto& t : *it) {
          if (!t.is_string()) refuse("keyword 'type' must be a string or an array of strings", "type", path + "/type");
          types.push_back(t.get<std::string>());
        }
      else refuse("keyword 'type' must be a string or an array of strings", "type", path + "/type");
    } else if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) {
      types.push_back("object");
    } else if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) {
      types.push_back("array");
    } else if (s.contains("minLength") || s.contains("maxLength")) {
      types.push_back("string");
    } else {
      return "json-value";
    }
    std::string body;
    for (const auto& t : types) body += (body.empty() ? "" : " | ") + typed(s, t, path);
    return types.size() == 1 ? body : "( " + body + " )";
  }

  std::string reference(const ojson& ref, const std::string& path) {
    if (!ref.is_string()) refuse("keyword '$ref' must be a string", "$ref", path);
    const std::string target = ref.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    const ojson* node = nullptr;
    if (target == "#") node = &root_;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p = prefix;
      if (target.rfind(p, 0) != 0) continue;
      const std::string defs = p.substr(2, p.size() - 3), name = target.substr(p.size());
      if (root_.contains(defs) && root_[defs].is_object() && root_[defs].contains(name)) node = &root_[defs][name];
    }
    if (!node) refuse("refers to '" + target + "', which is not '#', '#/$defs/NAME' or '#/definitions/NAME' of this schema", "$ref", path);
    // Named before it is compiled, so that a recursive schema refers back to it.
    const std::string name = std::string("s") += std::to_string(counter_++);
    refs_[target] = name;
    const std::string body = visit(*node, target.substr(1));
    rules_ += name + " ::= " + body + "\n";
    return name;
  }

  std::string typed(const ojson& s, const std::string& type, const std::string& path) {
    if (type == "string") {
      const uint32_t lo = count(s, "minLength", 0, path), hi = count(s, "maxLength", UINT32_MAX, path);
      if (lo == 0 && hi == UINT32_MAX) return "json-string";
      if (hi < lo) refuse("has maxLength below minLength", "maxLength", path + "/maxLength");
      return rule(R"("\"" json-char{)" + std::to_string(lo) + "," + (hi == UINT32_MAX ? "" : std::to_string(hi)) + R"(} "\"")");
    }
    if (type == "integer") return "json-integer";
    if (type == "number") return "json-number";
    if (type == "boolean") return "json-boolean";
    if (type == "null") return "json-null";
    if (type == "object") return object(s, path);
    if (type == "array") return array(s, path);
    refuse("has type '" + type + "' (use string, number, integer, boolean, null, object or array)", "type", path + "/type");
  }

  std::string object(const ojson& s, const std::string& path) {
    auto props = s.find("properties");
    auto extra = s.find("additionalProperties");
    if (extra != s.end() && !extra->is_boolean())
      refuse("gives 'additionalProperties' a schema; only true or false are supported", "additionalProperties", path + "/additionalProperties");
    std::set<std::string> required;
    if (auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) refuse("keyword 'required' must be an array of strings", "required", path + "/required");
      for (const auto& n : *r) {
        if (!n.is_string()) refuse("keyword 'required' must be an array of strings", "required", path + "/required");
        if (props == s.end() || !props->contains(n.get<std::string>()))
          refuse("requires property '" + n.get<std::string>() + "' but does not list it in 'properties'", "required", path + "/required");
        required.insert(n.get<std::string>());
      }
    }
    if (props == s.end() || props->empty()) {
      // No properties: any object, or only {} where no others may appear.
      return extra != s.end() && !extra->get<bool>() ? R"(( "{" ws "}" ))" : "json-object";
    }
    if (!props->is_object()) refuse("keyword 'properties' must be an object", "properties", path + "/properties");
    // Members in the schema's order, each optional one present or not, commas between:
    // first_k: none written yet, properties k.. to go; rest_k: one written already.
    std::vector<std::string> kv;
    std::vector<bool> req;
    for (auto it = props->begin(); it != props->end(); ++it) {
      ojson key = it.key();
      kv.push_back(rule(literal(key.dump()) + " ws \":\" ws " + visit(it.value(), path + "/properties/" + it.key()) + " ws"));
      req.push_back(required.count(it.key()) > 0);
    }
    auto cat = [](const std::string& a, const std::string& b) { return a.empty() ? b : b.empty() ? a : a + " " + b; };
    const size_t n = kv.size();
    std::vector<std::string> first(n + 1), rest(n + 1);  // "" = nothing
    for (size_t k = n; k-- > 0;) {
      const std::string member = "\",\" ws " + kv[k];
      rest[k] = rule(req[k] ? cat(member, rest[k + 1]) : cat("( " + member + " )?", rest[k + 1]));
      const std::string with = cat(kv[k], rest[k + 1]);
      first[k] = rule(req[k] ? with : first[k + 1].empty() ? "( " + with + " )?" : with + " | " + first[k + 1]);
    }
    return rule(R"("{" ws )" + first[0] + R"( "}")");
  }

  std::string array(const ojson& s, const std::string& path) {
    std::string item = "json-value";
    if (auto it = s.find("items"); it != s.end()) item = visit(*it, path + "/items");
    const uint32_t lo = count(s, "minItems", 0, path), hi = count(s, "maxItems", UINT32_MAX, path);
    if (hi < lo) refuse("has maxItems below minItems", "maxItems", path + "/maxItems");
    if (hi == 0) return R"(( "[" ws "]" ))";
    const std::string more_lo = std::to_string(lo == 0 ? 0 : lo - 1), more_hi = hi == UINT32_MAX ? "" : std::to_string(hi - 1);
    const std::string items = item + " ws ( \",\" ws " + item + " ws ){" + more_lo + "," + more_hi + "}";
    return rule(R"("[" ws )" + (lo == 0 ? "( " + items + " )?" : items) + R"( "]")");
  }
};

}  // namespace

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  return Compiler(schema).run();
}

std::string json_object_gbnf() { return std::string("root ::= json-object\n") + kBase; }

std::string json_value_gbnf() { return std::string("root ::= json-value\n") + kBase; }

}  // namespace ember::llm::grammar
