#include "llm/normalizer.h"

#include <cstdlib>
#include <utf8proc.h>

#include "common/error.h"
#include "llm/regex.h"
#include "llm/utf8.h"

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
  while (pos < text.size()) utf8::append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(utf8::next(text, pos)))));
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
                "ember supports NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace and Sequence of them");
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
