// tokenizer.json's "normalizer": Unicode normalization forms (utf8proc), Lowercase, Prepend,
// Replace, Strip and Sequence. Anything else is refused at load time with the component's name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::llm {

class Regex;

class Normalizer {
 public:
  // `spec` is the JSON value of "normalizer" (null means none).
  static Normalizer from_json(const nlohmann::json& spec, const std::string& where);
  Normalizer();
  ~Normalizer();
  Normalizer(Normalizer&&) noexcept;
  Normalizer& operator=(Normalizer&&) noexcept;

  bool empty() const { return steps_.empty(); }
  std::string apply(std::string_view text) const;

 private:
  enum class Kind { NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Strip, ReplaceString, ReplaceRegex };
  struct Step {
    Kind kind;
    std::string text;     // Prepend: what to prepend; Replace: the literal pattern
    std::string content;  // Replace: the replacement
    std::shared_ptr<Regex> regex;
  };
  void add(const nlohmann::json& spec, const std::string& where);
  std::vector<Step> steps_;
};

}  // namespace ember::llm
