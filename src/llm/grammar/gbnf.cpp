#include "llm/grammar/gbnf.h"

#include <cctype>
#include <functional>
#include <map>
#include <optional>

#include "common/error.h"

namespace ember::llm::grammar {

bool Element::matches(uint32_t cp) const {
  bool in = false;
  for (const auto& [lo, hi] : ranges)
    if (cp >= lo && cp <= hi) {
      in = true;
      break;
    }
  return in != negated;
}

namespace {

constexpr uint32_t kMaxRepeat = 1000;  // {m,n} bounds: each copy is a rule element

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  std::shared_ptr<const Grammar> run() {
    auto g = std::make_shared<Grammar>();
    g_ = g.get();
    skip_space(true);
    while (i_ < s_.size()) {
      const size_t at = i_;
      std::string name = parse_name();
      if (name.empty()) fail("expected a rule name", at);
      skip_space(false);
      if (s_.compare(i_, 3, "::=") != 0) fail("expected '::=' after rule name '" + name + "'", i_);
      i_ += 3;
      const uint32_t id = rule_id(name);
      if (defined_[id]) fail("rule '" + name + "' is defined twice", at);
      defined_[id] = true;
      g_->rules[id].alternatives = parse_alternatives(name, /*nested=*/false);
      skip_space(true);
    }
    for (uint32_t r = 0; r < g_->rules.size(); r++)
      if (!defined_[r]) fail("rule '" + g_->rules[r].name + "' is used but never defined", first_use_[r]);
    auto root = ids_.find("root");
    if (root == ids_.end()) throw Error("the grammar has no 'root' rule", "grammar", "add a rule 'root ::= ...' where output starts");
    g_->root = root->second;
    check_left_recursion();
    return g;
  }

 private:
  const std::string& s_;
  size_t i_ = 0;
  Grammar* g_ = nullptr;
  std::map<std::string, uint32_t> ids_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;

  [[noreturn]] void fail(const std::string& what, size_t at) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < at && k < s_.size(); k++) {
      if (s_[k] == '\n') line++, col = 1;
      else col++;
    }
    throw Error(what, "grammar line " + std::to_string(line) + " column " + std::to_string(col),
                "see docs/structured-output.md for the GBNF syntax");
  }

  uint32_t rule_id(const std::string& name) {
    auto [it, added] = ids_.emplace(name, static_cast<uint32_t>(g_->rules.size()));
    if (added) {
      g_->rules.push_back({name, {}});
      defined_.push_back(false);
      first_use_.push_back(i_);
    }
    return it->second;
  }

  // A rule of our own (groups, repetitions), named after the rule it serves.
  uint32_t new_rule(const std::string& base, std::vector<Alternative> alts) {
    const std::string name = base + "-" + std::to_string(g_->rules.size());
    const uint32_t id = rule_id(name);
    defined_[id] = true;
    g_->rules[id].alternatives = std::move(alts);
    return id;
  }

  static bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

  std::string parse_name() {
    const size_t start = i_;
    while (i_ < s_.size() && name_char(s_[i_])) i_++;
    return s_.substr(start, i_ - start);
  }

  void skip_space(bool newlines) {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') i_++;
      } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        i_++;
      } else {
        break;
      }
    }
  }

  // True where the text at i_ starts the next rule (`name ::=`), which ends the current one.
  bool at_rule_start() const {
    size_t k = i_;
    while (k < s_.size() && name_char(s_[k])) k++;
    if (k == i_) return false;
    while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t')) k++;
    return s_.compare(k, 3, "::=") == 0;
  }

  uint32_t decode_utf8() {
    const auto b = static_cast<unsigned char>(s_[i_]);
    const int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (len == 0 || i_ + len > s_.size()) fail("invalid UTF-8 in the grammar", i_);
    uint32_t cp = len == 1 ? b : b & (0x3f >> (len - 1));
    for (int k = 1; k < len; k++) {
      const auto c = static_cast<unsigned char>(s_[i_ + k]);
      if ((c & 0xc0) != 0x80) fail("invalid UTF-8 in the grammar", i_);
      cp = (cp << 6) | (c & 0x3f);
    }
    i_ += len;
    return cp;
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; k++) {
      if (i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) fail("expected " + std::to_string(digits) + " hex digits", i_);
      const char c = s_[i_++];
      v = v * 16 + (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
    }
    return v;
  }

  // One character of a literal or class, escapes decoded.
  uint32_t parse_char() {
    if (i_ >= s_.size()) fail("unexpected end of the grammar", i_);
    if (s_[i_] != '\\') return decode_utf8();
    const size_t at = i_++;
    if (i_ >= s_.size()) fail("unfinished escape", at);
    switch (s_[i_++]) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case '\\': return '\\';
      case '"': return '"';
      case '\'': return '\'';
      case '[': return '[';
      case ']': return ']';
      case '-': return '-';
      case '^': return '^';
      case '/': return '/';
      case 'x': return parse_hex(2);
      case 'u': return parse_hex(4);
      case 'U': return parse_hex(8);
      default: fail(std::string("unknown escape '\\") + s_[i_ - 1] + "'", at);
    }
  }

  std::vector<Alternative> parse_alternatives(const std::string& rule, bool nested) {
    std::vector<Alternative> alts;
    alts.push_back(parse_sequence(rule, nested));
    while (i_ < s_.size() && s_[i_] == '|') {
      i_++;
      alts.push_back(parse_sequence(rule, nested));
    }
    return alts;
  }

  // Elements up to `|`, `)` (nested) or the next rule; ends with an End element.
  Alternative parse_sequence(const std::string& rule, bool nested) {
    Alternative seq;
    size_t item_start = 0;  // where the last item (the target of a postfix operator) begins
    while (true) {
      skip_space(true);
      if (i_ >= s_.size() || s_[i_] == '|' || (s_[i_] == ')' && nested) || (!nested && at_rule_start())) break;
      const size_t at = i_;
      const char c = s_[i_];
      if (c == '"') {
        i_++;
        item_start = seq.size();
        while (i_ < s_.size() && s_[i_] != '"') {
          const uint32_t cp = parse_char();
          seq.push_back(Element{Element::Char, false, 0, {{cp, cp}}});
        }
        if (i_ >= s_.size()) fail("unterminated literal", at);
        i_++;
      } else if (c == '[') {
        i_++;
        Element e{Element::Char, false, 0, {}};
        if (i_ < s_.size() && s_[i_] == '^') e.negated = true, i_++;
        while (i_ < s_.size() && s_[i_] != ']') {
          const uint32_t lo = parse_char();
          uint32_t hi = lo;
          if (i_ + 1 < s_.size() && s_[i_] == '-' && s_[i_ + 1] != ']') {
            i_++;
            hi = parse_char();
            if (hi < lo) fail("character range is backwards", at);
          }
          e.ranges.emplace_back(lo, hi);
        }
        if (i_ >= s_.size()) fail("unterminated character class", at);
        i_++;
        item_start = seq.size();
        seq.push_back(std::move(e));
      } else if (c == '.') {
        i_++;
        item_start = seq.size();
        seq.push_back(Element{Element::Char, true, 0, {}});
      } else if (c == '(') {
        i_++;
        auto alts = parse_alternatives(rule, true);
        if (i_ >= s_.size() || s_[i_] != ')') fail("expected ')'", at);
        i_++;
        item_start = seq.size();
        seq.push_back(Element{Element::Ref, false, new_rule(rule, std::move(alts)), {}});
      } else if (name_char(c)) {
        const std::string name = parse_name();
        item_start = seq.size();
        seq.push_back(Element{Element::Ref, false, rule_id(name), {}});
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (seq.empty() || item_start >= seq.size()) fail(std::string("'") + c + "' follows nothing", at);
        i_++;
        uint32_t lo = 0, hi = UINT32_MAX;
        if (c == '+') lo = 1;
        else if (c == '?') hi = 1;
        else if (c == '{') parse_bounds(lo, hi, at);
        Alternative item(seq.begin() + item_start, seq.end());
        seq.resize(item_start);
        item.push_back(Element{});
        seq.push_back(Element{Element::Ref, false, repeat(rule, item, lo, hi), {}});
        item_start = seq.size();  // a second postfix operator is an error
      } else {
        fail(std::string("unexpected character '") + c + "'", at);
      }
    }
    seq.push_back(Element{});
    return seq;
  }

  void parse_bounds(uint32_t& lo, uint32_t& hi, size_t at) {
    auto number = [&]() -> uint32_t {
      skip_space(false);
      uint64_t v = 0;
      const size_t start = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        v = v * 10 + (s_[i_++] - '0');
        if (v > kMaxRepeat) fail("repetition bound above " + std::to_string(kMaxRepeat), at);
      }
      if (i_ == start) fail("expected a number in {m,n}", i_);
      skip_space(false);
      return static_cast<uint32_t>(v);
    };
    lo = number();
    hi = lo;
    if (i_ < s_.size() && s_[i_] == ',') {
      i_++;
      skip_space(false);
      hi = (i_ < s_.size() && s_[i_] == '}') ? UINT32_MAX : number();
    }
    if (i_ >= s_.size() || s_[i_] != '}') fail("expected '}'", at);
    i_++;
    if (hi < lo) fail("{m,n} with n < m", at);
  }

  // A rule matching `item` (ending with End) lo..hi times (hi = UINT32_MAX: unbounded).
  uint32_t repeat(const std::string& rule, const Alternative& item, uint32_t lo, uint32_t hi) {
    auto body = [&](std::optional<uint32_t> tail) {
      Alternative a(item.begin(), item.end() - 1);
      if (tail) a.push_back(Element{Element::Ref, false, *tail, {}});
      a.push_back(Element{});
      return a;
    };
    // The optional part: x* (x x*)|ε, or n - m nested optionals (x (x ...)?)?.
    std::optional<uint32_t> rest;
    if (hi == UINT32_MAX) {
      const uint32_t star = new_rule(rule, {});
      g_->rules[star].alternatives = {body(star), Alternative{Element{}}};
      rest = star;
    } else {
      for (uint32_t k = lo; k < hi; k++) rest = new_rule(rule, {body(rest), Alternative{Element{}}});
    }
    Alternative seq;
    for (uint32_t k = 0; k < lo; k++) seq.insert(seq.end(), item.begin(), item.end() - 1);
    if (rest) seq.push_back(Element{Element::Ref, false, *rest, {}});
    seq.push_back(Element{});
    return new_rule(rule, {std::move(seq)});
  }

  void check_left_recursion() const {
    const auto& rules = g_->rules;
    std::vector<bool> nullable(rules.size(), false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < rules.size(); r++) {
        if (nullable[r]) continue;
        for (const auto& alt : rules[r].alternatives) {
          bool all = true;
          for (const auto& e : alt)
            if (e.kind == Element::Char || (e.kind == Element::Ref && !nullable[e.rule])) all = false;
          if (all) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    // Rules each rule may expand first (before consuming a character); a cycle is left recursion.
    std::vector<std::vector<uint32_t>> first(rules.size());
    for (size_t r = 0; r < rules.size(); r++)
      for (const auto& alt : rules[r].alternatives)
        for (const auto& e : alt) {
          if (e.kind != Element::Ref) break;
          first[r].push_back(e.rule);
          if (!nullable[e.rule]) break;
        }
    std::vector<uint8_t> state(rules.size(), 0);  // 0 new, 1 on the path, 2 done
    std::function<void(uint32_t)> visit = [&](uint32_t r) {
      state[r] = 1;
      for (uint32_t n : first[r]) {
        if (state[n] == 1)
          throw Error("rule '" + rules[n].name + "' is left-recursive", "grammar",
                      "rewrite it so that every alternative consumes a character before it refers back to itself (use * or + for lists)");
        if (state[n] == 0) visit(n);
      }
      state[r] = 2;
    };
    for (uint32_t r = 0; r < rules.size(); r++)
      if (state[r] == 0) visit(r);
  }
};

}  // namespace

std::shared_ptr<const Grammar> parse_gbnf(const std::string& text) { return Parser(text).run(); }

}  // namespace ember::llm::grammar
