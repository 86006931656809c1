#include "server/tool_calls.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "tokenizer/utf8.h"

namespace ember::server {
namespace {

using ojson = nlohmann::ordered_json;

// Model output is untrusted: nesting is bounded so a long run of '[' cannot exhaust the stack.
constexpr int kMaxDepth = 64;

struct Malformed {
  std::string what;
  size_t at;
};

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;  // JSON text must be valid UTF-8
  llm::utf8::append(out, static_cast<char32_t>(cp));
}

bool ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  std::vector<ToolCall> calls() {
    std::vector<ToolCall> out;
    skip_ws();
    const bool bracketed = peek() == '[';
    if (bracketed) pos_++;
    while (true) {
      skip_ws();
      if (bracketed && peek() == ']') {
        pos_++;
        break;
      }
      if (!bracketed && at_end()) break;
      out.push_back(peek() == '{' ? json_call() : call());
      skip_ws();
      if (peek() == ',') {
        pos_++;
        continue;
      }
      if (bracketed) expect(']', "',' or ']' after a call");
      break;
    }
    skip_ws();
    if (!at_end()) fail("text after the call list");
    if (out.empty()) fail("an empty call list");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Malformed{what, pos_}; }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  void skip_ws() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) pos_++;
  }
  void expect(char c, const char* what) {
    skip_ws();
    if (peek() != c) fail(std::string("expected ") + what);
    pos_++;
  }

  // A function name: identifiers joined by dots ("math.add"); '-' is allowed inside as OpenAI
  // function names allow it.
  std::string name() {
    const size_t start = pos_;
    while (true) {
      if (!ident_start(peek())) fail("expected a function name");
      while (ident_char(peek()) || peek() == '-') pos_++;
      if (peek() != '.') break;
      pos_++;
    }
    return std::string(s_.substr(start, pos_ - start));
  }

  ToolCall call() {
    ToolCall c;
    c.name = name();
    expect('(', "'(' after the function name");
    std::set<std::string> seen;
    while (true) {
      skip_ws();
      if (peek() == ')') {
        pos_++;
        return c;
      }
      if (!ident_start(peek())) fail("a positional argument or no keyword: arguments must be keyword=value");
      const size_t start = pos_;
      while (ident_char(peek())) pos_++;
      std::string key(s_.substr(start, pos_ - start));
      skip_ws();
      if (peek() != '=') fail("positional argument '" + key + "': arguments must be keyword=value");
      pos_++;
      if (!seen.insert(key).second) fail("keyword argument '" + key + "' repeated");
      c.arguments[key] = value(0);
      skip_ws();
      if (peek() == ',') pos_++;
      else if (peek() != ')') fail("expected ',' or ')' after an argument");
    }
  }

  // {"name": "f", "arguments": {...}}: the JSON form.
  ToolCall json_call() {
    const size_t start = pos_;
    ojson obj = value(0);
    ToolCall c;
    if (!obj.contains("name") || !obj["name"].is_string() || obj["name"].get<std::string>().empty()) {
      pos_ = start;
      fail("a call object without a \"name\" string");
    }
    c.name = obj["name"].get<std::string>();
    const char* key = obj.contains("arguments") ? "arguments" : obj.contains("parameters") ? "parameters" : nullptr;
    if (key) {
      ojson args = obj[key];
      if (args.is_string()) {
        args = ojson::parse(args.get<std::string>(), nullptr, false);
        if (args.is_discarded()) args = nullptr;
      }
      if (!args.is_object()) {
        pos_ = start;
        fail("the arguments of '" + c.name + "' are not an object");
      }
      c.arguments = std::move(args);
    }
    return c;
  }

  ojson value(int depth) {
    if (depth > kMaxDepth) fail("values nested too deeply");
    skip_ws();
    const char c = peek();
    if (c == '\'' || c == '"') return ojson(string());
    if (c == '[' || c == '(') return sequence(c == '[' ? ']' : ')', depth);
    if (c == '{') return dict(depth);
    if (digit(c) || c == '-' || c == '+' || (c == '.' && digit(peek(1)))) return number();
    if (ident_start(c)) {
      const size_t start = pos_;
      while (ident_char(peek())) pos_++;
      const std::string_view word = s_.substr(start, pos_ - start);
      if (word == "True" || word == "true") return true;
      if (word == "False" || word == "false") return false;
      if (word == "None" || word == "null") return nullptr;
      pos_ = start;
      fail(std::string("'").append(word) + "' is not a literal");
    }
    fail(at_end() ? "a value is missing" : "expected a value");
  }

  ojson sequence(char close, int depth) {
    pos_++;
    ojson out = ojson::array();
    while (true) {
      skip_ws();
      if (peek() == close) {
        pos_++;
        return out;
      }
      out.push_back(value(depth + 1));
      skip_ws();
      if (peek() == ',') pos_++;
      else if (peek() != close) fail(std::string("expected ',' or '") + close + "'");
    }
  }

  ojson dict(int depth) {
    pos_++;
    ojson out = ojson::object();
    while (true) {
      skip_ws();
      if (peek() == '}') {
        pos_++;
        return out;
      }
      ojson key = value(depth + 1);
      std::string k;
      if (key.is_string()) k = key.get<std::string>();
      else if (key.is_number()) k = key.dump();
      else fail("a dict key must be a string or a number");
      expect(':', "':' after a dict key");
      out[k] = value(depth + 1);
      skip_ws();
      if (peek() == ',') pos_++;
      else if (peek() != '}') fail("expected ',' or '}'");
    }
  }

  ojson number() {
    const size_t start = pos_;
    std::string text;
    if (peek() == '-' || peek() == '+') text += s_[pos_++];
    bool is_float = false, digits = false;
    auto run = [&] {
      while (digit(peek()) || (peek() == '_' && digit(peek(1)) && digits)) {
        if (peek() != '_') text += peek();
        digits = true;
        pos_++;
      }
    };
    run();
    if (peek() == '.') {
      is_float = true;
      text += s_[pos_++];
      run();
    }
    if (!digits) fail("a malformed number");
    if (peek() == 'e' || peek() == 'E') {
      is_float = true;
      text += s_[pos_++];
      if (peek() == '-' || peek() == '+') text += s_[pos_++];
      if (!digit(peek())) fail("a malformed exponent");
      digits = false;
      run();
    }
    if (ident_char(peek())) {
      pos_ = start;
      fail("a malformed number");
    }
    if (!is_float) {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0) return static_cast<int64_t>(v);
    }
    const double d = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(d)) {
      pos_ = start;
      fail("a number out of range");
    }
    return d;
  }

  std::string string() {
    const char q = s_[pos_];
    const bool triple = peek(1) == q && peek(2) == q;
    pos_ += triple ? 3 : 1;
    std::string out;
    while (true) {
      if (at_end()) fail("an unterminated string");
      const char c = s_[pos_];
      if (c == q && (!triple || (peek(1) == q && peek(2) == q))) {
        pos_ += triple ? 3 : 1;
        return out;
      }
      if (c != '\\') {
        out += c;
        pos_++;
        continue;
      }
      pos_++;
      if (at_end()) fail("an unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case 'a': out += '\a'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '/': out += '/'; break;  // JSON's escape, written by models that mix the two
        case '\n': break;             // a line continuation
        case 'x': append_utf8(out, hex_digits(2)); break;
        case 'u': {
          uint32_t cp = hex_digits(4);
          // A JSON-style surrogate pair spells one character.
          if (cp >= 0xD800 && cp <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
            const size_t save = pos_;
            pos_ += 2;
            const uint32_t lo = hex_digits(4);
            if (lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            else pos_ = save;
          }
          append_utf8(out, cp);
          break;
        }
        case 'U': append_utf8(out, hex_digits(8)); break;
        default:
          if (e >= '0' && e <= '7') {  // octal, up to three digits
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && peek() >= '0' && peek() <= '7'; k++) v = v * 8 + static_cast<uint32_t>(s_[pos_++] - '0');
            append_utf8(out, v);
          } else {  // Python keeps an unknown escape as written
            out += '\\';
            out += e;
          }
      }
    }
  }

  uint32_t hex_digits(int n) {
    uint32_t v = 0;
    for (int k = 0; k < n; k++) {
      const int h = hex_value(peek());
      if (h < 0) fail("a malformed \\x, \\u or \\U escape");
      v = v * 16 + static_cast<uint32_t>(h);
      pos_++;
    }
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<std::vector<ToolCall>> parse_lfm2_calls(std::string_view text, std::string* error) {
  try {
    return Parser(text).calls();
  } catch (const Malformed& m) {
    if (error) *error = m.what + " at offset " + std::to_string(m.at);
    return std::nullopt;
  }
}

std::string python_literal(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null: return "None";
    case ojson::value_t::boolean: return v.get<bool>() ? "True" : "False";
    case ojson::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); i++) out += (i ? ", " : "") + python_literal(v[i]);
      return out + "]";
    }
    case ojson::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : v.items()) {
        out += (first ? "" : ", ") + ojson(k).dump(-1, ' ', false, ojson::error_handler_t::replace) + ": " + python_literal(x);
        first = false;
      }
      return out + "}";
    }
    default: return v.dump(-1, ' ', false, ojson::error_handler_t::replace);  // strings and numbers read alike
  }
}

std::string format_lfm2_calls(const std::vector<ToolCall>& calls) {
  std::string out = "[";
  for (size_t i = 0; i < calls.size(); i++) {
    out += (i ? ", " : "") + calls[i].name + "(";
    bool first = true;
    for (const auto& [k, v] : calls[i].arguments.items()) {
      out += (first ? "" : ", ") + k + "=" + python_literal(v);
      first = false;
    }
    out += ")";
  }
  return out + "]";
}

}  // namespace ember::server
