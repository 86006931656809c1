// JSON Schema to GBNF: each supported keyword accepts what the schema accepts and refuses what it
// refuses; unsupported keywords are refused by name; random walks through the compiled grammar
// always produce JSON that parses and validates (checked by a validator written here, not by the
// compiler).
#include <gtest/gtest.h>

#include <random>

#include "llm/grammar/gbnf.h"
#include "llm/grammar/json_schema.h"
#include "llm/grammar/matcher.h"

namespace ember::llm::grammar {
namespace {

using ojson = nlohmann::ordered_json;

// Bytes 1..255 as single tokens, and some longer ones that span JSON tokens.
std::shared_ptr<TokenTrie> json_vocab() {
  std::vector<std::string> toks = {""};
  for (int b = 1; b < 256; b++) toks.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t : {"{\"", "\":", "\": ", "\",", "\"}", "[\"", "\"]", "true", "false", "null", "12", ", ", "\n  ", "},", "}]", "\xc3\xa9"})
    toks.push_back(t);
  return std::make_shared<TokenTrie>(toks);
}

bool matches(const std::string& gbnf, const std::string& text) {
  Matcher m(parse_gbnf(gbnf), json_vocab());
  return m.accept_bytes(text) && m.can_end();
}

bool schema_accepts(const char* schema, const std::string& text) { return matches(json_schema_to_gbnf(ojson::parse(schema)), text); }

// The subset validator the tests judge by.
bool valid(const ojson& v, const ojson& s, const ojson& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) {
    const std::string r = s["$ref"];
    return valid(v, r == "#" ? root : root["$defs"][r.substr(8)], root);
  }
  if (s.contains("const") && v != s["const"]) return false;
  if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) return false;
  for (const char* k : {"anyOf", "oneOf"})
    if (s.contains(k)) {
      int n = 0;
      for (const auto& sub : s[k]) n += valid(v, sub, root);
      if (std::string(k) == "anyOf" ? n == 0 : n != 1) return false;
    }
  if (s.contains("type")) {
    auto is = [&](const std::string& t) {
      return (t == "string" && v.is_string()) || (t == "integer" && v.is_number_integer()) || (t == "number" && v.is_number()) ||
             (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null()) || (t == "object" && v.is_object()) ||
             (t == "array" && v.is_array());
    };
    bool any = false;
    if (s["type"].is_string()) any = is(s["type"]);
    else
      for (const auto& t : s["type"]) any = any || is(t);
    if (!any) return false;
  }
  if (v.is_string()) {
    size_t cps = 0;
    for (unsigned char c : v.get<std::string>()) cps += (c & 0xc0) != 0x80;
    if (s.contains("maxLength") && cps > s["maxLength"].get<size_t>()) return false;
    if (s.contains("minLength") && cps < s["minLength"].get<size_t>()) return false;
  }
  if (v.is_object()) {
    if (s.contains("required"))
      for (const auto& r : s["required"])
        if (!v.contains(r.get<std::string>())) return false;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (s.contains("properties") && s["properties"].contains(it.key())) {
        if (!valid(it.value(), s["properties"][it.key()], root)) return false;
      } else if (s.value("additionalProperties", ojson(true)) == false) {
        return false;
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("items"))
      for (const auto& e : v)
        if (!valid(e, s["items"], root)) return false;
  }
  return true;
}

TEST(JsonSchema, ScalarTypes) {
  EXPECT_TRUE(schema_accepts(R"({"type":"string"})", R"("h\u00e9\"llo\n")"));
  EXPECT_FALSE(schema_accepts(R"({"type":"string"})", "\"a\nb\""));  // raw control characters
  EXPECT_TRUE(schema_accepts(R"({"type":"integer"})", "-120"));
  EXPECT_FALSE(schema_accepts(R"({"type":"integer"})", "012"));
  EXPECT_FALSE(schema_accepts(R"({"type":"integer"})", "1.5"));
  EXPECT_TRUE(schema_accepts(R"({"type":"number"})", "-0.25e+10"));
  EXPECT_FALSE(schema_accepts(R"({"type":"number"})", "1."));
  EXPECT_TRUE(schema_accepts(R"({"type":"boolean"})", "false"));
  EXPECT_FALSE(schema_accepts(R"({"type":"boolean"})", "1"));
  EXPECT_TRUE(schema_accepts(R"({"type":"null"})", "null"));
  EXPECT_TRUE(schema_accepts(R"({"type":["string","null"]})", "null"));
  EXPECT_TRUE(schema_accepts(R"({"type":["string","null"]})", "\"x\""));
  EXPECT_FALSE(schema_accepts(R"({"type":["string","null"]})", "3"));
  EXPECT_TRUE(schema_accepts(R"({"type":"string","minLength":1,"maxLength":2})", "\"\xc3\xa9z\""));
  EXPECT_FALSE(schema_accepts(R"({"type":"string","minLength":1,"maxLength":2})", "\"\""));
  EXPECT_FALSE(schema_accepts(R"({"type":"string","minLength":1,"maxLength":2})", "\"abc\""));
}

TEST(JsonSchema, ObjectsPropertiesRequired) {
  const char* s = R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"},"c":{"type":"boolean"}},
                      "required":["a"],"additionalProperties":false})";
  EXPECT_TRUE(schema_accepts(s, R"({"b":1,"a":"x","c":true})"));
  EXPECT_TRUE(schema_accepts(s, R"({"a":"x"})"));
  EXPECT_TRUE(schema_accepts(s, "{\n  \"b\": 2,\n  \"a\": \"x\"\n}"));
  EXPECT_FALSE(schema_accepts(s, R"({"b":1})"));                // a is required
  EXPECT_FALSE(schema_accepts(s, R"({"a":"x","d":1})"));        // no others
  EXPECT_FALSE(schema_accepts(s, R"({"a":"x",})"));             // no trailing comma
  EXPECT_FALSE(schema_accepts(s, R"({"a":1})"));                // a's type
  EXPECT_TRUE(schema_accepts(R"({"type":"object"})", R"({"any":[1,{"x":null}]})"));
  EXPECT_TRUE(schema_accepts(R"({"type":"object","additionalProperties":false})", "{}"));
  EXPECT_FALSE(schema_accepts(R"({"type":"object","additionalProperties":false})", R"({"a":1})"));
  const char* nested = R"({"properties":{"p":{"type":"object","properties":{"q":{"type":"null"}},"required":["q"]}},"required":["p"]})";
  EXPECT_TRUE(schema_accepts(nested, R"({"p":{"q":null}})"));
  EXPECT_FALSE(schema_accepts(nested, R"({"p":{}})"));
}

TEST(JsonSchema, ArraysEnumConstAnyOf) {
  const char* a = R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2})";
  EXPECT_TRUE(schema_accepts(a, "[1]"));
  EXPECT_TRUE(schema_accepts(a, "[1, 2]"));
  EXPECT_FALSE(schema_accepts(a, "[]"));
  EXPECT_FALSE(schema_accepts(a, "[1,2,3]"));
  EXPECT_FALSE(schema_accepts(a, "[\"x\"]"));
  EXPECT_TRUE(schema_accepts(R"({"type":"array"})", R"([1,"a",[]])"));
  const char* e = R"({"enum":["red",1,null,{"k":[true]}]})";
  EXPECT_TRUE(schema_accepts(e, "\"red\""));
  EXPECT_TRUE(schema_accepts(e, "1"));
  EXPECT_TRUE(schema_accepts(e, R"({"k":[true]})"));
  EXPECT_FALSE(schema_accepts(e, "\"blue\""));
  EXPECT_TRUE(schema_accepts(R"({"const":"only \"this\""})", R"("only \"this\"")"));
  EXPECT_FALSE(schema_accepts(R"({"const":"only"})", R"("other")"));
  for (const char* k : {"anyOf", "oneOf"}) {
    const std::string s = std::string(R"({")") + k + R"(":[{"type":"integer"},{"type":"string","maxLength":1}]})";
    EXPECT_TRUE(schema_accepts(s.c_str(), "7"));
    EXPECT_TRUE(schema_accepts(s.c_str(), "\"x\""));
    EXPECT_FALSE(schema_accepts(s.c_str(), "\"xy\""));
  }
}

TEST(JsonSchema, LocalReferencesAndRecursion) {
  const char* s = R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/node"}]}},
                      "required":["v","next"]}},"$ref":"#/$defs/node"})";
  EXPECT_TRUE(schema_accepts(s, R"({"v":1,"next":{"v":2,"next":null}})"));
  EXPECT_FALSE(schema_accepts(s, R"({"v":1,"next":{"v":2}})"));
}

TEST(JsonSchema, UnsupportedKeywordsAreRefusedByName) {
  auto refused = [](const char* schema) -> std::pair<std::string, std::string> {
    try {
      json_schema_to_gbnf(ojson::parse(schema));
    } catch (const SchemaError& e) {
      return {e.keyword(), e.path()};
    }
    return {};
  };
  EXPECT_EQ(refused(R"({"type":"string","format":"date"})"), (std::pair<std::string, std::string>{"format", "/format"}));
  EXPECT_EQ(refused(R"({"properties":{"x":{"type":"string","pattern":"a+"}}})").first, "pattern");
  EXPECT_EQ(refused(R"({"properties":{"x":{"type":"string","pattern":"a+"}}})").second, "/properties/x/pattern");
  EXPECT_EQ(refused(R"({"type":"integer","minimum":0})").first, "minimum");
  EXPECT_EQ(refused(R"({"type":"object","additionalProperties":{"type":"string"}})").first, "additionalProperties");
  EXPECT_EQ(refused(R"({"type":"uuid"})").first, "type");
  EXPECT_EQ(refused(R"({"$ref":"http://elsewhere/schema"})").first, "$ref");
  EXPECT_EQ(refused(R"({"required":["missing"],"properties":{}})").first, "required");
  EXPECT_EQ(refused(R"({"title":"t","description":"d","type":"string"})").first, "");  // annotations are fine
}

TEST(JsonSchema, JsonObjectIsAnyObject) {
  EXPECT_TRUE(matches(json_object_gbnf(), R"({"a":[1,2.5,{"b":"c"}],"d":null})"));
  EXPECT_FALSE(matches(json_object_gbnf(), "[1]"));
  EXPECT_FALSE(matches(json_object_gbnf(), "\"text\""));
}

// Random token choices under the mask always end in a document that parses and validates.
TEST(JsonSchema, RandomWalksParseAndValidate) {
  const ojson schema = ojson::parse(R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":5},"age":{"type":"integer"},"score":{"type":"number"},
      "color":{"enum":["red","green","blue"]},"ok":{"type":"boolean"},
      "tags":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":3},
      "ref":{"anyOf":[{"type":"null"},{"const":7}]},
      "opt":{"type":"object","properties":{"x":{"type":["integer","null"]}},"required":["x"]}},
      "required":["name","age","score","color","ok","tags","ref"],"additionalProperties":false})");
  auto g = parse_gbnf(json_schema_to_gbnf(schema));
  auto vocab = json_vocab();
  auto cache = std::make_shared<MaskCache>();
  std::mt19937 rng(5);
  int finished = 0;
  for (int walk = 0; walk < 100; walk++) {
    Matcher m(g, vocab, cache);
    std::string text;
    for (int step = 0; step < 3000 && !m.done(); step++) {
      const auto& mask = m.allowed();
      std::vector<uint32_t> ids;
      for (uint32_t t = 0; t < vocab->vocab(); t++)
        if ((mask[t / 32] >> (t % 32)) & 1) ids.push_back(t);
      ASSERT_FALSE(ids.empty()) << text;
      const uint32_t pick = ids[rng() % ids.size()];
      ASSERT_TRUE(m.accept(pick));
      text += vocab->bytes(pick);
    }
    if (!m.done()) continue;
    finished++;
    ojson doc;
    ASSERT_NO_THROW(doc = ojson::parse(text)) << text;
    EXPECT_TRUE(valid(doc, schema, schema)) << text;
  }
  EXPECT_GE(finished, 95);
}

}  // namespace
}  // namespace ember::llm::grammar
