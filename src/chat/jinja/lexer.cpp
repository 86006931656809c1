#include "chat/jinja/lexer.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "tokenizer/utf8.h"

namespace ember::llm::jinja {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string where(size_t line) { return "chat template line " + std::to_string(line); }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Token> run() {
    bool strip_next = false;   // the previous tag ended with '-'
    bool trim_newline = false;  // the previous tag was a block or comment (trim_blocks)
    while (pos_ < src_.size()) {
      size_t open = find_open(pos_);
      std::string text(src_.substr(pos_, open - pos_));
      bool starts_line = at_line_start_of(pos_);
      if (trim_newline && !strip_next && !text.empty() && text[0] == '\n') starts_line = true;
      if (strip_next) text.erase(0, std::find_if(text.begin(), text.end(), [](char c) { return !is_space(c); }) - text.begin());
      else if (trim_newline && !text.empty() && text[0] == '\n') text.erase(0, 1);
      else if (trim_newline && text.size() > 1 && text[0] == '\r' && text[1] == '\n') text.erase(0, 2);
      strip_next = trim_newline = false;
      if (open == src_.size()) {
        if (!text.empty() && text.back() == '\n') text.pop_back();  // keep_trailing_newline=False
        emit_text(text);
        break;
      }
      char kind = src_[open + 1];
      char modifier = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (modifier == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (kind != '{' && modifier != '+') {
        // lstrip_blocks: drop spaces and tabs between the line start and a block or comment tag.
        size_t k = text.size();
        while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) k--;
        if (k == 0 ? starts_line : text[k - 1] == '\n') text.resize(k);
      }
      line_ += std::count(src_.begin() + pos_, src_.begin() + open, '\n');
      emit_text(text);
      pos_ = open + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
      if (kind == '#') {
        size_t close = src_.find("#}", pos_);
        if (close == std::string_view::npos) throw Error("unclosed comment", where(line_), "close it with #}");
        strip_next = close > pos_ && src_[close - 1] == '-';
        trim_newline = !strip_next;
        line_ += std::count(src_.begin() + pos_, src_.begin() + close, '\n');
        pos_ = close + 2;
        continue;
      }
      bool block = kind == '%';
      if (block && raw_tag()) continue;
      tokens_.push_back({block ? Token::Kind::BlockBegin : Token::Kind::VarBegin, "", line_});
      char close_char = block ? '%' : '}';
      bool plus = false;
      strip_next = lex_expression(close_char, plus);
      tokens_.push_back({block ? Token::Kind::BlockEnd : Token::Kind::VarEnd, "", line_});
      trim_newline = block && !strip_next && !plus;
    }
    tokens_.push_back({Token::Kind::End, "", line_});
    return std::move(tokens_);
  }

 private:
  bool at_line_start_of(size_t p) const { return p == 0 || src_[p - 1] == '\n'; }

  size_t find_open(size_t from) const {
    for (size_t p = src_.find('{', from); p != std::string_view::npos; p = src_.find('{', p + 1))
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) return p;
    return src_.size();
  }

  void emit_text(const std::string& text) {
    if (!text.empty()) tokens_.push_back({Token::Kind::Text, text, line_});
  }

  // {% raw %}...{% endraw %}: the text in between is copied as is.
  bool raw_tag() {
    size_t p = pos_;
    while (p < src_.size() && is_space(src_[p])) p++;
    if (src_.substr(p, 3) != "raw") return false;
    size_t close = src_.find("%}", p);
    if (close == std::string_view::npos) return false;
    size_t body = close + 2;
    for (size_t e = src_.find("{%", body); e != std::string_view::npos; e = src_.find("{%", e + 2)) {
      size_t q = e + 2;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) q++;
      while (q < src_.size() && is_space(src_[q])) q++;
      if (src_.substr(q, 6) != "endraw") continue;
      std::string text(src_.substr(body, e - body));
      if (src_[e + 2] == '-')
        while (!text.empty() && is_space(text.back())) text.pop_back();
      emit_text(text);
      size_t end_close = src_.find("%}", q);
      if (end_close == std::string_view::npos) break;
      pos_ = end_close + 2;
      return true;
    }
    throw Error("{% raw %} without {% endraw %}", where(line_));
  }

  // Tokens up to the closing "%}" / "}}"; returns whether the tag ended with "-".
  bool lex_expression(char close_char, bool& plus) {
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        if (src_[pos_] == '\n') line_++;
        pos_++;
      }
      if (pos_ >= src_.size()) throw Error("unclosed tag", where(line_), "close it with }} or %}");
      char c = src_[pos_];
      auto closes_at = [&](size_t p) { return p + 1 < src_.size() && src_[p] == close_char && src_[p + 1] == '}'; };
      if ((c == '-' || c == '+') && closes_at(pos_ + 1)) {
        plus = c == '+';
        pos_ += 3;
        return c == '-';
      }
      if (closes_at(pos_)) {
        pos_ += 2;
        return false;
      }
      if (is_name_start(c)) {
        size_t start = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) pos_++;
        tokens_.push_back({Token::Kind::Name, std::string(src_.substr(start, pos_ - start)), line_});
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t start = pos_;
        bool is_float = false;
        while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) pos_++;
        if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
          is_float = true;
          pos_++;
          while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) pos_++;
        }
        std::string digits(src_.substr(start, pos_ - start));
        digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
        tokens_.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, digits, line_});
      } else if (c == '\'' || c == '"') {
        tokens_.push_back({Token::Kind::String, lex_string(c), line_});
      } else {
        static const char* ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "=",
                                    "(", ")", "[", "]", "{", "}", ".", ",", ":", "|"};
        bool found = false;
        for (const char* op : ops) {
          size_t n = strlen(op);
          if (src_.substr(pos_, n) == op) {
            tokens_.push_back({Token::Kind::Op, op, line_});
            pos_ += n;
            found = true;
            break;
          }
        }
        if (!found) throw Error(std::string("unexpected character '") + c + "'", where(line_));
      }
    }
  }

  std::string lex_string(char quote) {
    std::string out;
    pos_++;
    while (pos_ < src_.size() && src_[pos_] != quote) {
      char c = src_[pos_++];
      if (c == '\n') line_++;
      if (c != '\\' || pos_ >= src_.size()) {
        out += c;
        continue;
      }
      char e = src_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'u':
        case 'x': {
          size_t n = e == 'u' ? 4 : 2;
          uint32_t cp = uint32_t(std::stoul(std::string(src_.substr(pos_, n)), nullptr, 16));
          pos_ += n;
          append_utf8(out, cp);
          break;
        }
        case '\n': break;
        default:
          out += '\\';
          out += e;
      }
    }
    if (pos_ >= src_.size()) throw Error("unterminated string literal", where(line_));
    pos_++;
    return out;
  }

  std::string_view src_;
  size_t pos_ = 0, line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view source) { return Lexer(source).run(); }

}  // namespace ember::llm::jinja
