#include "chat/jinja/value.h"

#include <charconv>
#include <cmath>

#include "common/error.h"

namespace ember::llm::jinja {

namespace {

std::string float_text(double v) {
  // Python's repr: shortest round trip, always with a '.' or an exponent.
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string python_quote(const std::string& s) {
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == q) {
      out += '\\';
      out += q;
    }
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += char(c);
  }
  return out + q;
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace

namespace {

template <class Json>
Value convert(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return Value::none();
    case Json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return Value::integer(j.template get<int64_t>());
    case Json::value_t::number_float: return Value::real(j.template get<double>());
    case Json::value_t::string: return Value::string(j.template get<std::string>());
    case Json::value_t::array: {
      List items;
      for (const auto& e : j) items.push_back(convert(e));
      return Value::make_list(std::move(items));
    }
    case Json::value_t::object: {
      Dict items;
      for (const auto& [k, v] : j.items()) items.emplace_back(k, convert(v));
      return Value::make_dict(std::move(items));
    }
    default: return Value();
  }
}

}  // namespace

Value Value::from_json(const nlohmann::json& j) { return convert(j); }
Value Value::from_json(const nlohmann::ordered_json& j) { return convert(j); }

bool Value::truthy() const {
  switch (kind) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b;
    case Kind::Int: return i != 0;
    case Kind::Float: return f != 0;
    case Kind::String: return !s.empty();
    case Kind::List: return !list->empty();
    case Kind::Dict: return !dict->empty();
    case Kind::Namespace: return true;
  }
  return false;
}

std::string Value::str() const {
  switch (kind) {
    case Kind::Undefined: return "";
    case Kind::String: return s;
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return b ? "True" : "False";
    case Kind::Int: return std::to_string(i);
    case Kind::Float: return float_text(f);
    case Kind::String: return python_quote(s);
    case Kind::List: {
      std::string out = "[";
      for (size_t k = 0; k < list->size(); k++) out += (k ? ", " : "") + (*list)[k].repr();
      return out + "]";
    }
    case Kind::Dict: {
      std::string out = "{";
      for (size_t k = 0; k < dict->size(); k++)
        out += (k ? ", " : "") + python_quote((*dict)[k].first) + ": " + (*dict)[k].second.repr();
      return out + "}";
    }
    case Kind::Namespace: return "<Namespace>";
  }
  return "";
}

Value Value::get(const std::string& key) const {
  if (!is_mapping()) return Value();
  for (const auto& [k, v] : *dict)
    if (k == key) return v;
  return Value();
}

void Value::set(const std::string& key, Value v) {
  for (auto& [k, old] : *dict)
    if (k == key) {
      old = std::move(v);
      return;
    }
  dict->emplace_back(key, std::move(v));
}

std::string Value::to_json(int indent, int depth) const {
  auto newline = [&](int d) {
    std::string s;
    if (indent >= 0) {
      s += '\n';
      s.append(size_t(indent) * size_t(d), ' ');
    }
    return s;
  };
  std::string item_sep = indent < 0 ? ", " : ",";
  switch (kind) {
    case Kind::Undefined:
    case Kind::None: return "null";
    case Kind::Bool: return b ? "true" : "false";
    case Kind::Int: return std::to_string(i);
    case Kind::Float: return std::isfinite(f) ? float_text(f) : (std::isnan(f) ? "NaN" : f > 0 ? "Infinity" : "-Infinity");
    case Kind::String: return json_quote(s);
    case Kind::List: {
      if (list->empty()) return "[]";
      std::string out = "[";
      for (size_t k = 0; k < list->size(); k++)
        out += (k ? item_sep : "") + newline(depth + 1) + (*list)[k].to_json(indent, depth + 1);
      return out + newline(depth) + "]";
    }
    case Kind::Dict:
    case Kind::Namespace: {
      if (dict->empty()) return "{}";
      std::string out = "{";
      for (size_t k = 0; k < dict->size(); k++)
        out += (k ? item_sep : "") + newline(depth + 1) + json_quote((*dict)[k].first) + ": " +
               (*dict)[k].second.to_json(indent, depth + 1);
      return out + newline(depth) + "}";
    }
  }
  return "null";
}

bool operator==(const Value& a, const Value& b) {
  using K = Value::Kind;
  bool a_num = a.is_number() || a.kind == K::Bool, b_num = b.is_number() || b.kind == K::Bool;
  if (a_num && b_num) return a.as_double() == b.as_double();
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::Undefined:
    case K::None: return true;
    case K::String: return a.s == b.s;
    case K::List: return *a.list == *b.list;
    case K::Dict: {
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [k, v] : *a.dict)
        if (!(b.get(k) == v)) return false;
      return true;
    }
    case K::Namespace: return a.dict == b.dict;
    default: return false;
  }
}

bool less_than(const Value& a, const Value& b) {
  if ((a.is_number() || a.kind == Value::Kind::Bool) && (b.is_number() || b.kind == Value::Kind::Bool))
    return a.as_double() < b.as_double();
  if (a.is_string() && b.is_string()) return a.s < b.s;
  if (a.kind == Value::Kind::List && b.kind == Value::Kind::List)
    return std::lexicographical_compare(a.list->begin(), a.list->end(), b.list->begin(), b.list->end(), less_than);
  throw Error("cannot order " + a.repr() + " and " + b.repr(), "chat template");
}

}  // namespace ember::llm::jinja
