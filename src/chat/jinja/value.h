// The values a chat template computes with, shaped like Python's (jinja2 runs on Python):
// undefined, None, bool, int, float, str, list, dict (insertion-ordered) and namespace. Lists,
// dicts and namespaces are shared by reference, as in Python, so `ns.x = ...` is seen by every
// holder of `ns`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::llm::jinja {

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;

struct Value {
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace };
  Kind kind = Kind::Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;  // also a namespace's attributes

  static Value none() { return with(Kind::None); }
  static Value boolean(bool v) {
    Value x = with(Kind::Bool);
    x.b = v;
    return x;
  }
  static Value integer(int64_t v) {
    Value x = with(Kind::Int);
    x.i = v;
    return x;
  }
  static Value real(double v) {
    Value x = with(Kind::Float);
    x.f = v;
    return x;
  }
  static Value string(std::string v) {
    Value x = with(Kind::String);
    x.s = std::move(v);
    return x;
  }
  static Value make_list(List items = {}) {
    Value x = with(Kind::List);
    x.list = std::make_shared<List>(std::move(items));
    return x;
  }
  static Value make_dict(Dict items = {}, bool is_namespace = false) {
    Value x = with(is_namespace ? Kind::Namespace : Kind::Dict);
    x.dict = std::make_shared<Dict>(std::move(items));
    return x;
  }
  static Value from_json(const nlohmann::json& j);
  static Value from_json(const nlohmann::ordered_json& j);  // keeps the object key order

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  bool is_mapping() const { return kind == Kind::Dict || kind == Kind::Namespace; }
  double as_double() const { return kind == Kind::Float ? f : double(kind == Kind::Bool ? b : i); }

  bool truthy() const;
  // Python's str(): what {{ x }} prints (undefined prints nothing).
  std::string str() const;
  // Python's repr(): how values print inside a list or dict.
  std::string repr() const;
  // A dict entry or namespace attribute; undefined when missing.
  Value get(const std::string& key) const;
  void set(const std::string& key, Value v);
  // JSON text as transformers' tojson writes it (json.dumps with ensure_ascii=False).
  std::string to_json(int indent = -1, int depth = 0) const;

 private:
  static Value with(Kind k) {
    Value x;
    x.kind = k;
    return x;
  }
};

bool operator==(const Value& a, const Value& b);
// Python's ordering for numbers and strings; throws for other kinds.
bool less_than(const Value& a, const Value& b);

}  // namespace ember::llm::jinja
