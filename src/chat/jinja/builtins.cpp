#include "chat/jinja/builtins.h"

#include <algorithm>
#include <cmath>

#include <utf8proc.h>

#include "common/error.h"
#include "tokenizer/utf8.h"

namespace ember::llm::jinja {

void template_error(const std::string& what, size_t line) {
  throw Error(what, "chat template line " + std::to_string(line));
}

namespace {

// The characters (code points) of a string, each as its UTF-8 bytes.
std::vector<std::string> chars_of(const std::string& s) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < s.size();) {
    size_t start = pos;
    utf8::next(s, pos);
    out.emplace_back(s.substr(start, pos - start));
  }
  return out;
}

bool is_py_space(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

std::string map_case(const std::string& s, bool upper) {
  std::string out;
  for (size_t pos = 0; pos < s.size();) {
    auto cp = static_cast<utf8proc_int32_t>(utf8::next(s, pos));
    utf8::append(out, static_cast<char32_t>(upper ? utf8proc_toupper(cp) : utf8proc_tolower(cp)));
  }
  return out;
}

// Python's str.strip family: `chars` none means whitespace.
std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  std::vector<std::string> cs = chars_of(s);
  std::vector<std::string> set;
  if (chars.is_string()) set = chars_of(chars.s);
  auto strippable = [&](const std::string& c) {
    if (!chars.is_string()) {
      size_t p = 0;
      return is_py_space(utf8::next(c, p));
    }
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t a = 0, b = cs.size();
  if (left)
    while (a < b && strippable(cs[a])) a++;
  if (right)
    while (b > a && strippable(cs[b - 1])) b--;
  std::string out;
  for (size_t k = a; k < b; k++) out += cs[k];
  return out;
}

Value split(const std::string& s, const Value& sep, int64_t maxsplit) {
  List parts;
  if (!sep.is_string()) {
    std::string cur;
    for (const std::string& c : chars_of(s)) {
      size_t p = 0;
      bool space = is_py_space(utf8::next(c, p));
      if (!space) cur += c;
      else if (!cur.empty() && (maxsplit < 0 || int64_t(parts.size()) < maxsplit)) {
        parts.push_back(Value::string(cur));
        cur.clear();
      } else if (!cur.empty()) cur += c;
    }
    if (!cur.empty()) parts.push_back(Value::string(strip(cur, Value(), false, true)));
    return Value::make_list(std::move(parts));
  }
  if (sep.s.empty()) template_error("split() with an empty separator", 0);
  size_t pos = 0;
  for (size_t hit; (maxsplit < 0 || int64_t(parts.size()) < maxsplit) && (hit = s.find(sep.s, pos)) != std::string::npos;) {
    parts.push_back(Value::string(s.substr(pos, hit - pos)));
    pos = hit + sep.s.size();
  }
  parts.push_back(Value::string(s.substr(pos)));
  return Value::make_list(std::move(parts));
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  size_t pos = 0;
  int64_t done = 0;
  if (from.empty()) return s;
  for (size_t hit; (count < 0 || done < count) && (hit = s.find(from, pos)) != std::string::npos; done++) {
    out += s.substr(pos, hit - pos) + to;
    pos = hit + from.size();
  }
  return out + s.substr(pos);
}

Value arg(const Args& args, const Kwargs& kwargs, size_t index, const char* name, const Value& fallback) {
  for (const auto& [k, v] : kwargs)
    if (k == name) return v;
  return index < args.size() ? args[index] : fallback;
}

std::string need_string(const Value& v, const std::string& what, size_t line) {
  if (!v.is_string()) template_error(what + " needs a string, got " + v.repr(), line);
  return v.s;
}

int64_t need_int(const Value& v, const std::string& what, size_t line) {
  if (v.kind == Value::Kind::Int) return v.i;
  if (v.kind == Value::Kind::Bool) return v.b;
  template_error(what + " needs an integer, got " + v.repr(), line);
}

Value attribute(const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t dot = path.find('.', pos);
    if (dot == std::string::npos) dot = path.size();
    cur = cur.get(path.substr(pos, dot - pos));
    pos = dot + 1;
  }
  return cur;
}

std::string title_case(const std::string& s, bool only_first) {
  std::string out;
  bool start = true;
  for (size_t pos = 0; pos < s.size();) {
    auto cp = static_cast<utf8proc_int32_t>(utf8::next(s, pos));
    bool letter = utf8proc_category(cp) <= UTF8PROC_CATEGORY_LO && utf8proc_category(cp) >= UTF8PROC_CATEGORY_LU;
    utf8proc_int32_t mapped = start ? utf8proc_toupper(cp) : utf8proc_tolower(cp);
    utf8::append(out, static_cast<char32_t>(mapped));
    start = only_first ? false : !letter;
  }
  return out;
}

}  // namespace

size_t length_of(const Value& v, size_t line) {
  switch (v.kind) {
    case Value::Kind::String: return chars_of(v.s).size();
    case Value::Kind::List: return v.list->size();
    case Value::Kind::Dict:
    case Value::Kind::Namespace: return v.dict->size();
    case Value::Kind::Undefined: return 0;
    default: template_error("length of " + v.repr() + " is undefined", line);
  }
}

List items_of(const Value& v, size_t line) {
  switch (v.kind) {
    case Value::Kind::List: return *v.list;
    case Value::Kind::Dict: {
      List keys;
      for (const auto& [k, x] : *v.dict) keys.push_back(Value::string(k));
      return keys;
    }
    case Value::Kind::String: {
      List cs;
      for (auto& c : chars_of(v.s)) cs.push_back(Value::string(c));
      return cs;
    }
    case Value::Kind::Undefined: return {};
    default: template_error(v.repr() + " is not iterable", line);
  }
}

Value slice_of(const Value& v, const Value& start, const Value& stop, const Value& step, size_t line) {
  List items = items_of(v, line);
  auto n = int64_t(items.size());
  int64_t st = step.is_none() || step.is_undefined() ? 1 : need_int(step, "slice step", line);
  if (st == 0) template_error("slice step cannot be zero", line);
  auto bound = [&](const Value& b, int64_t def) {
    if (b.is_none() || b.is_undefined()) return def;
    int64_t x = need_int(b, "slice index", line);
    if (x < 0) x += n;
    return st > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t a = bound(start, st > 0 ? 0 : n - 1), b = bound(stop, st > 0 ? n : -1);
  List out;
  for (int64_t k = a; st > 0 ? k < b : k > b; k += st) out.push_back(items[size_t(k)]);
  if (v.is_string()) {
    std::string s;
    for (auto& c : out) s += c.s;
    return Value::string(s);
  }
  return Value::make_list(std::move(out));
}

bool apply_test(const std::string& name, const Value& v, const Args& args, size_t line) {
  using K = Value::Kind;
  auto other = [&]() -> const Value& {
    if (args.empty()) template_error("test '" + name + "' needs an argument", line);
    return args[0];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == K::Int;
  if (name == "float") return v.kind == K::Float;
  if (name == "boolean") return v.kind == K::Bool;
  if (name == "true") return v.kind == K::Bool && v.b;
  if (name == "false") return v.kind == K::Bool && !v.b;
  if (name == "mapping") return v.kind == K::Dict;
  if (name == "sequence") return v.kind == K::List || v.kind == K::String || v.kind == K::Dict;
  if (name == "iterable") return v.kind == K::List || v.kind == K::String || v.kind == K::Dict;
  if (name == "callable") return false;
  if (name == "odd" || name == "even") return (need_int(v, name, line) % 2 != 0) == (name == "odd");
  if (name == "divisibleby") return need_int(v, name, line) % need_int(other(), name, line) == 0;
  if (name == "eq" || name == "equalto" || name == "==" || name == "sameas") return v == other();
  if (name == "ne" || name == "!=") return !(v == other());
  if (name == "lt" || name == "<") return less_than(v, other());
  if (name == "gt" || name == ">") return less_than(other(), v);
  if (name == "le" || name == "<=") return !less_than(other(), v);
  if (name == "ge" || name == ">=") return !less_than(v, other());
  if (name == "in") {
    const Value& c = other();
    if (c.is_string() && v.is_string()) return c.s.find(v.s) != std::string::npos;
    if (c.is_mapping()) return v.is_string() && !c.get(v.s).is_undefined();
    for (const auto& x : items_of(c, line))
      if (x == v) return true;
    return false;
  }
  if (name == "lower" || name == "upper") return v.is_string() && map_case(v.s, name == "upper") == v.s;
  template_error("unknown test '" + name + "'", line);
}

Value apply_filter(const std::string& name, const Value& v, const Args& args, const Kwargs& kwargs, size_t line) {
  static const Value kNone = Value::none(), kUndefined;
  if (name == "trim") return Value::string(strip(need_string(v, "trim", line), arg(args, kwargs, 0, "chars", kNone), true, true));
  if (name == "tojson") {
    const Value& indent = arg(args, kwargs, 0, "indent", kNone);
    return Value::string(v.to_json(indent.is_none() ? -1 : int(need_int(indent, "tojson indent", line))));
  }
  if (name == "length" || name == "count") return Value::integer(int64_t(length_of(v, line)));
  if (name == "upper" || name == "lower") return Value::string(map_case(v.str(), name == "upper"));
  if (name == "capitalize") return Value::string(title_case(v.str(), true));
  if (name == "title") return Value::string(title_case(v.str(), false));
  if (name == "string") return Value::string(v.str());
  if (name == "safe" || name == "e" || name == "escape") return v;  // no autoescaping in chat templates
  if (name == "default" || name == "d") {
    bool boolean = arg(args, kwargs, 1, "boolean", Value::boolean(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return arg(args, kwargs, 0, "default_value", Value::string(""));
    return v;
  }
  if (name == "join") {
    std::string sep = arg(args, kwargs, 0, "d", Value::string("")).str();
    const Value& attr = arg(args, kwargs, 1, "attribute", kNone);
    std::string out;
    List items = items_of(v, line);
    for (size_t k = 0; k < items.size(); k++) out += (k ? sep : "") + (attr.is_string() ? attribute(items[k], attr.s) : items[k]).str();
    return Value::string(out);
  }
  if (name == "items") {
    List out;
    if (v.is_mapping())
      for (const auto& [k, x] : *v.dict) out.push_back(Value::make_list({Value::string(k), x}));
    return Value::make_list(std::move(out));
  }
  if (name == "list") return Value::make_list(items_of(v, line));
  if (name == "first" || name == "last") {
    List items = items_of(v, line);
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") return slice_of(v, kNone, kNone, Value::integer(-1), line);
  if (name == "int") {
    if (v.kind == Value::Kind::Float) return Value::integer(int64_t(v.f));
    if (v.is_string()) {
      try {
        return Value::integer(std::stoll(v.s));
      } catch (...) {
        return Value::integer(0);
      }
    }
    return Value::integer(v.kind == Value::Kind::Int ? v.i : v.kind == Value::Kind::Bool ? v.b : 0);
  }
  if (name == "float") return Value::real(v.is_string() ? std::atof(v.s.c_str()) : v.as_double());
  if (name == "abs") return v.kind == Value::Kind::Float ? Value::real(std::fabs(v.f)) : Value::integer(std::llabs(v.i));
  if (name == "replace") {
    const Value& count = arg(args, kwargs, 2, "count", kNone);
    return Value::string(replace(v.str(), arg(args, kwargs, 0, "old", kUndefined).str(), arg(args, kwargs, 1, "new", kUndefined).str(),
                                 count.is_none() ? -1 : need_int(count, "replace count", line)));
  }
  if (name == "unique") {
    List out;
    for (const auto& x : items_of(v, line))
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    return Value::make_list(std::move(out));
  }
  if (name == "sort") {
    List out = items_of(v, line);
    bool reverse = arg(args, kwargs, 0, "reverse", Value::boolean(false)).truthy();
    const Value& attr = arg(args, kwargs, 2, "attribute", kNone);
    auto key = [&](const Value& x) { return attr.is_string() ? attribute(x, attr.s) : x; };
    std::stable_sort(out.begin(), out.end(), [&](const Value& a, const Value& b) {
      return reverse ? less_than(key(b), key(a)) : less_than(key(a), key(b));
    });
    return Value::make_list(std::move(out));
  }
  if (name == "map") {
    List out;
    const Value& attr = arg(args, kwargs, 99, "attribute", kNone);
    for (const auto& x : items_of(v, line)) {
      if (attr.is_string()) out.push_back(attribute(x, attr.s));
      else if (!args.empty()) out.push_back(apply_filter(need_string(args[0], "map", line), x, Args(args.begin() + 1, args.end()), {}, line));
      else template_error("map needs a filter name or attribute=", line);
    }
    return Value::make_list(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    bool by_attr = name.ends_with("attr"), keep = name.starts_with("select");
    size_t first = by_attr ? 1 : 0;
    List out;
    for (const auto& x : items_of(v, line)) {
      Value subject = by_attr ? attribute(x, need_string(args.at(0), name, line)) : x;
      bool pass = args.size() > first ? apply_test(need_string(args[first], name, line), subject, Args(args.begin() + long(first) + 1, args.end()), line)
                                      : subject.truthy();
      if (pass == keep) out.push_back(x);
    }
    return Value::make_list(std::move(out));
  }
  if (name == "indent") {
    int64_t width = need_int(arg(args, kwargs, 0, "width", Value::integer(4)), "indent", line);
    bool first = arg(args, kwargs, 1, "first", Value::boolean(false)).truthy();
    std::string pad(size_t(width), ' '), s = v.str(), out;
    for (size_t k = 0; k < s.size(); k++) {
      out += s[k];
      if (s[k] == '\n' && k + 1 < s.size() && s[k + 1] != '\n') out += pad;
    }
    return Value::string(first ? pad + out : out);
  }
  if (name == "wordcount") return Value::integer(int64_t(length_of(split(v.str(), kNone, -1), line)));
  template_error("unknown filter '" + name + "'", line);
}

Value call_method(const Value& o, const std::string& name, const Args& args, const Kwargs& kwargs, size_t line) {
  static const Value kNone = Value::none(), kUndefined;
  if (o.is_string()) {
    const std::string& s = o.s;
    if (name == "strip" || name == "lstrip" || name == "rstrip")
      return Value::string(strip(s, arg(args, kwargs, 0, "chars", kNone), name != "rstrip", name != "lstrip"));
    if (name == "startswith" || name == "endswith") {
      const Value& p = arg(args, kwargs, 0, "prefix", kUndefined);
      List options = p.kind == Value::Kind::List ? *p.list : List{p};
      for (const auto& x : options) {
        std::string t = need_string(x, name, line);
        if (name == "startswith" ? s.starts_with(t) : s.ends_with(t)) return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (name == "split") {
      const Value& maxsplit = arg(args, kwargs, 1, "maxsplit", Value::integer(-1));
      return split(s, arg(args, kwargs, 0, "sep", kNone), need_int(maxsplit, "maxsplit", line));
    }
    if (name == "replace") {
      const Value& count = arg(args, kwargs, 2, "count", Value::integer(-1));
      return Value::string(replace(s, need_string(arg(args, kwargs, 0, "old", kUndefined), "replace", line),
                                   need_string(arg(args, kwargs, 1, "new", kUndefined), "replace", line), need_int(count, "count", line)));
    }
    if (name == "upper" || name == "lower") return Value::string(map_case(s, name == "upper"));
    if (name == "title") return Value::string(title_case(s, false));
    if (name == "capitalize") return Value::string(title_case(s, true));
    if (name == "find" || name == "index") {
      size_t hit = s.find(need_string(arg(args, kwargs, 0, "sub", kUndefined), name, line));
      if (hit == std::string::npos && name == "index") template_error("substring not found", line);
      return Value::integer(hit == std::string::npos ? -1 : int64_t(chars_of(s.substr(0, hit)).size()));
    }
    if (name == "count") {
      std::string t = need_string(arg(args, kwargs, 0, "sub", kUndefined), name, line);
      int64_t n = 0;
      for (size_t p = t.empty() ? std::string::npos : s.find(t); p != std::string::npos; p = s.find(t, p + t.size())) n++;
      return Value::integer(n);
    }
    if (name == "join") {
      std::string out;
      List items = items_of(arg(args, kwargs, 0, "iterable", kUndefined), line);
      for (size_t k = 0; k < items.size(); k++) out += (k ? s : "") + need_string(items[k], "join", line);
      return Value::string(out);
    }
    if (name == "isdigit" || name == "isspace" || name == "isalpha") {
      if (s.empty()) return Value::boolean(false);
      for (size_t pos = 0; pos < s.size();) {
        char32_t c = utf8::next(s, pos);
        bool ok = name == "isspace" ? is_py_space(c) : name == "isdigit" ? (c >= '0' && c <= '9') : std::isalpha(int(c)) != 0;
        if (!ok) return Value::boolean(false);
      }
      return Value::boolean(true);
    }
  }
  if (o.is_mapping()) {
    if (name == "items") return apply_filter("items", o, {}, {}, line);
    if (name == "keys") return Value::make_list(items_of(o, line));
    if (name == "values") {
      List out;
      for (const auto& [k, x] : *o.dict) out.push_back(x);
      return Value::make_list(std::move(out));
    }
    if (name == "get") {
      Value x = o.get(need_string(arg(args, kwargs, 0, "key", kUndefined), "get", line));
      return x.is_undefined() ? arg(args, kwargs, 1, "default", kNone) : x;
    }
  }
  if (o.kind == Value::Kind::List) {
    if (name == "index" || name == "count") {
      const Value& x = arg(args, kwargs, 0, "value", kUndefined);
      int64_t n = 0;
      for (size_t k = 0; k < o.list->size(); k++)
        if ((*o.list)[k] == x) {
          if (name == "index") return Value::integer(int64_t(k));
          n++;
        }
      if (name == "index") template_error(x.repr() + " is not in list", line);
      return Value::integer(n);
    }
  }
  template_error("unknown method '" + name + "' on " + o.repr().substr(0, 40), line);
}

}  // namespace ember::llm::jinja
