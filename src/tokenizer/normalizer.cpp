#include "tokenizer/normalizer.h"

#include <cstdlib>
#include <utf8proc.h>

#include "common/error.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode_properties.h"
#include "tokenizer/utf8.h"

namespace ember::llm {

namespace {

std::string unicode_form(std::string_view text, int options) {
  utf8proc_uint8_t* out = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                        &out, static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n < 0) throw Error(std::string("Unicode normalization failed: ") + utf8proc_errmsg(n), "normalizer");
  std::string result(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  // The reference's Unicode version, not utf8proc's (tokenizer/unicode_properties.h).
  while (pos < text.size()) {
    const auto l = unicode::to_lowercase(utf8::next(text, pos));
    for (int i = 0; i < l.count; i++) utf8::append(out, l.c[i]);
  }
  return out;
}

std::string replace_all(std::string_view text, std::string_view what, std::string_view with) {
  if (what.empty()) return std::string(text);
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(what, pos)) != std::string_view::npos; pos = hit + what.size()) {
    out.append(text.substr(pos, hit - pos));
    out.append(with);
  }
  out.append(text.substr(pos));
  return out;
}

// Rust's char::is_whitespace (the White_Space property), which upstream's Strip uses.
bool is_white_space(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0d) || c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
         c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

std::string strip_whitespace(const std::string& s, bool left, bool right) {
  size_t begin = 0, end = s.size();
  if (left)
    for (size_t pos = 0; pos < s.size();) {
      if (!is_white_space(utf8::next(s, pos))) break;
      begin = pos;
    }
  if (right) {
    size_t last_end = begin;
    for (size_t pos = begin; pos < s.size();)
      if (!is_white_space(utf8::next(s, pos))) last_end = pos;
    end = last_end;
  }
  return s.substr(begin, end - begin);
}

}  // namespace

Normalizer::Normalizer() = default;
Normalizer::~Normalizer() = default;
Normalizer::Normalizer(Normalizer&&) noexcept = default;
Normalizer& Normalizer::operator=(Normalizer&&) noexcept = default;

Normalizer Normalizer::from_json(const nlohmann::json& spec, const std::string& where) {
  Normalizer n;
  if (!spec.is_null()) n.add(spec, where);
  return n;
}

void Normalizer::add(const nlohmann::json& spec, const std::string& where) {
  std::string type = spec.value("type", "");
  if (type == "Sequence") {
    const auto& list = spec.at("normalizers");
    for (size_t i = 0; i < list.size(); i++) add(list[i], where + ".normalizers[" + std::to_string(i) + "]");
  } else if (type == "NFC") {
    steps_.push_back({Kind::NFC});
  } else if (type == "NFD") {
    steps_.push_back({Kind::NFD});
  } else if (type == "NFKC") {
    steps_.push_back({Kind::NFKC});
  } else if (type == "NFKD") {
    steps_.push_back({Kind::NFKD});
  } else if (type == "Lowercase") {
    steps_.push_back({Kind::Lowercase});
  } else if (type == "Strip") {
    // text: which sides ("l", "r", "lr").
    std::string sides = std::string(spec.value("strip_left", true) ? "l" : "") + (spec.value("strip_right", true) ? "r" : "");
    steps_.push_back({Kind::Strip, sides, ""});
  } else if (type == "Prepend") {
    steps_.push_back({Kind::Prepend, spec.at("prepend").get<std::string>()});
  } else if (type == "Replace") {
    const auto& pattern = spec.at("pattern");
    std::string content = spec.at("content").get<std::string>();
    if (pattern.contains("String")) {
      steps_.push_back({Kind::ReplaceString, pattern["String"].get<std::string>(), content});
    } else {
      auto re = std::make_shared<Regex>(pattern.at("Regex").get<std::string>(), where + ".pattern");
      steps_.push_back({Kind::ReplaceRegex, "", content, re});
    }
  } else {
    throw Error("unsupported normalizer type \"" + type + "\"", where,
                "ember supports NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip and Sequence of them");
  }
}

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (const auto& step : steps_) {
    switch (step.kind) {
      case Kind::NFC: s = unicode_form(s, UTF8PROC_COMPOSE); break;
      case Kind::NFD: s = unicode_form(s, UTF8PROC_DECOMPOSE); break;
      case Kind::NFKC: s = unicode_form(s, UTF8PROC_COMPOSE | UTF8PROC_COMPAT); break;
      case Kind::NFKD: s = unicode_form(s, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT); break;
      case Kind::Lowercase: s = lowercase(s); break;
      case Kind::Prepend:
        if (!s.empty()) s = step.text + s;
        break;
      case Kind::Strip: s = strip_whitespace(s, step.text.find('l') != std::string::npos, step.text.find('r') != std::string::npos); break;
      case Kind::ReplaceString: s = replace_all(s, step.text, step.content); break;
      case Kind::ReplaceRegex: {
        std::string out;
        size_t prev = 0;
        step.regex->find_all(s, [&](size_t a, size_t b) {
          out.append(s, prev, a - prev);
          out += step.content;
          prev = b;
        });
        out.append(s, prev, std::string::npos);
        s = std::move(out);
        break;
      }
    }
  }
  return s;
}

}  // namespace ember::llm
