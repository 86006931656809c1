// A compiled PCRE2 pattern in UTF mode with Unicode properties (JIT when available), used by
// the Split and ByteLevel pre-tokenizers. Patterns come from tokenizer.json (Oniguruma syntax in
// upstream; the constructs these files use mean the same in PCRE2). Unicode classes are matched at
// the reference library's Unicode version, not PCRE2's (tokenizer/regex_classes.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace ember::llm {

class Regex {
 public:
  // Throws ember::Error naming `where` when the pattern does not compile.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Calls `on_match(start, end)` for each non-overlapping match, left to right, in byte offsets.
  // `text` must be valid UTF-8 (the tokenizer checks once up front).
  void find_all(std::string_view text, const std::function<void(size_t, size_t)>& on_match) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::llm
