#include "tokenizer/unicode_properties.h"

#include <algorithm>
#include <string>

namespace ember::llm::unicode {

namespace {

std::string loose(std::string_view name) {
  std::string out;
  for (char c : name)
    if (c != ' ' && c != '_' && c != '-') out += char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

}  // namespace

std::string_view version() { return detail::kVersion; }
std::string_view std_version() { return detail::kStdVersion; }

std::span<const CodeRange> std_numeric() {
  return std::span<const CodeRange>(detail::kRanges + detail::kStdNumeric.begin, detail::kStdNumeric.count);
}

Lowered to_lowercase(char32_t c) {
  const auto* end = detail::kLowercase + detail::kLowercaseCount;
  const auto* it = std::lower_bound(detail::kLowercase, end, c, [](const detail::Lowercase& e, char32_t v) { return e.from < v; });
  if (it == end || it->from != c) return {{c, 0}, 1};
  return {{it->to[0], it->to[1]}, it->to[1] ? 2 : 1};
}

std::optional<std::span<const CodeRange>> property(std::string_view name) {
  const std::string key = loose(name);
  for (size_t i = 0; i < detail::kPropertyCount; i++) {
    const auto& p = detail::kProperties[i];
    if (loose(p.name) == key) return std::span<const CodeRange>(detail::kRanges + p.begin, p.count);
  }
  return std::nullopt;
}

bool contains(std::span<const CodeRange> ranges, char32_t c) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), c, [](char32_t v, const CodeRange& r) { return v < r.first; });
  return it != ranges.begin() && c <= std::prev(it)->last;
}

std::vector<CodeRange> complement(std::span<const CodeRange> ranges) {
  std::vector<CodeRange> out;
  char32_t next = 0;
  for (const auto& r : ranges) {
    if (r.first > next) out.push_back({next, r.first - 1});
    next = r.last + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return out;
}

}  // namespace ember::llm::unicode
