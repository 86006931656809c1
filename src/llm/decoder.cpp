#include "llm/decoder.h"

#include <cstdlib>

#include "common/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace ember::llm {

namespace {

std::string replace_all(const std::string& s, const std::string& what, const std::string& with) {
  if (what.empty()) return s;
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(what, pos)) != std::string::npos; pos = hit + what.size()) {
    out.append(s, pos, hit - pos);
    out += with;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

// "<0x41>" -> 0x41, or -1 for any other token.
int byte_token(const std::string& t) {
  if (t.size() != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>') return -1;
  char* end = nullptr;
  long v = std::strtol(t.substr(3, 2).c_str(), &end, 16);
  return *end == 0 ? static_cast<int>(v) : -1;
}

std::string byte_level_bytes(const std::string& token) {
  std::string out;
  size_t pos = 0;
  while (pos < token.size()) {
    int b = byte_level::byte_of_char(utf8::next(token, pos));
    if (b < 0) return token;  // a token outside the alphabet (an added token) stays as it is
    out += static_cast<char>(b);
  }
  return out;
}

}  // namespace

Decoder Decoder::from_json(const nlohmann::json& spec, const std::string& where) {
  Decoder d;
  if (!spec.is_null()) {
    d.none_ = false;
    d.add(spec, where);
  }
  return d;
}

void Decoder::add(const nlohmann::json& spec, const std::string& where) {
  std::string type = spec.value("type", "");
  if (type == "Sequence") {
    const auto& list = spec.at("decoders");
    for (size_t i = 0; i < list.size(); i++) add(list[i], where + ".decoders[" + std::to_string(i) + "]");
  } else if (type == "ByteLevel") {
    steps_.push_back({Kind::ByteLevel});
  } else if (type == "ByteFallback") {
    steps_.push_back({Kind::ByteFallback});
  } else if (type == "Fuse") {
    steps_.push_back({Kind::Fuse});
  } else if (type == "Metaspace") {
    Step s{Kind::Metaspace};
    s.pattern = spec.value("replacement", "\xE2\x96\x81");
    std::string scheme = spec.value("prepend_scheme", spec.value("add_prefix_space", true) ? "always" : "never");
    s.strip_first_space = scheme != "never";
    steps_.push_back(s);
  } else if (type == "Replace") {
    const auto& pattern = spec.at("pattern");
    if (!pattern.contains("String"))
      throw Error("Replace decoder with a regex pattern is not supported", where + ".pattern", "use a String pattern");
    steps_.push_back({Kind::Replace, pattern["String"].get<std::string>(), spec.at("content").get<std::string>()});
  } else if (type == "Strip") {
    Step s{Kind::Strip, spec.at("content").get<std::string>()};
    s.strip_start = spec.value("start", 0);
    s.strip_stop = spec.value("stop", 0);
    steps_.push_back(s);
  } else {
    throw Error("unsupported decoder type \"" + type + "\"", where,
                "ember supports ByteLevel, ByteFallback, Fuse, Metaspace, Replace, Strip and Sequence of them");
  }
}

std::string Decoder::decode(std::vector<std::string> tokens, bool raw_byte_runs) const {
  if (none_) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); i++) out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const auto& step : steps_) {
    switch (step.kind) {
      case Kind::ByteLevel: {
        std::string all;
        for (const auto& t : tokens) all += byte_level_bytes(t);
        tokens = {all};
        break;
      }
      case Kind::ByteFallback: {
        // Runs of <0xNN> tokens become their bytes when those form valid UTF-8, else one U+FFFD each.
        std::vector<std::string> out;
        std::string run;
        size_t run_tokens = 0;
        auto flush = [&] {
          if (run_tokens == 0) return;
          if (raw_byte_runs || utf8::first_invalid(run) == std::string::npos) out.push_back(run);
          else
            for (size_t i = 0; i < run_tokens; i++) out.push_back("\xEF\xBF\xBD");
          run.clear();
          run_tokens = 0;
        };
        for (const auto& t : tokens) {
          int b = byte_token(t);
          if (b >= 0) {
            run += static_cast<char>(b);
            run_tokens++;
          } else {
            flush();
            out.push_back(t);
          }
        }
        flush();
        tokens = std::move(out);
        break;
      }
      case Kind::Fuse: {
        std::string all;
        for (const auto& t : tokens) all += t;
        tokens = {all};
        break;
      }
      case Kind::Metaspace:
        // Upstream drops every replacement character of the first token (the prefix it added).
        for (size_t i = 0; i < tokens.size(); i++)
          tokens[i] = replace_all(tokens[i], step.pattern, i == 0 && step.strip_first_space ? "" : " ");
        break;
      case Kind::Replace:
        for (auto& t : tokens) t = replace_all(t, step.pattern, step.content);
        break;
      case Kind::Strip:
        for (auto& t : tokens) {
          size_t a = 0, b = t.size();
          for (size_t i = 0; i < step.strip_start && a < b && t.compare(a, step.pattern.size(), step.pattern) == 0; i++) a += step.pattern.size();
          for (size_t i = 0; i < step.strip_stop && b - a >= step.pattern.size() &&
                             t.compare(b - step.pattern.size(), step.pattern.size(), step.pattern) == 0;
               i++)
            b -= step.pattern.size();
          t = t.substr(a, b - a);
        }
        break;
    }
  }
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

}  // namespace ember::llm
