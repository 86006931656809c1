// tokenizer.json's "pre_tokenizer": Split (a PCRE2 regex or a literal, with Hugging Face's
// delimiter behaviours and invert), ByteLevel (optional prefix space, the GPT-2 regex, the byte
// alphabet), Digits, Metaspace (spaces become the replacement, prepend_scheme, split),
// Whitespace, WhitespaceSplit, Punctuation, BertPreTokenizer and Sequence of them. Others are
// refused at load time by name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::llm {

class Regex;

class PreTokenizer {
 public:
  // `spec` is the JSON value of "pre_tokenizer" (null means the text is one piece).
  static PreTokenizer from_json(const nlohmann::json& spec, const std::string& where);
  PreTokenizer();
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Splits one normalized segment into the words the model sees; empty words are dropped.
  // `at_input_start`: the segment begins the input (no added token before it), which
  // Metaspace's prepend_scheme "first" asks about.
  void run(std::string_view text, std::vector<std::string>& words, bool at_input_start = true) const;

  enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

 private:
  enum class Kind { Split, ByteLevel, Metaspace };
  enum class Prepend { Always, First, Never };
  struct Step {
    Kind kind;
    std::shared_ptr<Regex> regex;  // Split with a regex, or ByteLevel with use_regex
    std::string literal;           // Split with a plain string pattern
    Behavior behavior = Behavior::Isolated;
    bool invert = false;
    bool add_prefix_space = false;
    Prepend prepend = Prepend::Always;  // Metaspace; `literal` holds the replacement, `invert` means split
  };
  void add(const nlohmann::json& spec, const std::string& where);
  static void split(const Step& step, std::string_view piece, std::vector<std::string>& out);
  std::vector<Step> steps_;
};

}  // namespace ember::llm
