#include "tokenizer/regex_classes.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "tokenizer/unicode_properties.h"

namespace ember::llm {

namespace {

using unicode::CodeRange;

void append_code_point(std::string& out, char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\x{%x}", unsigned(c));
  out += buf;
}

// The ranges as items of a bracket class. Surrogates are left out (PCRE2 refuses them in UTF
// mode, and UTF-8 text cannot hold them). PCRE2 tests a class's items above U+00FF one by one in
// order, so the widest ranges, which hold most of the text a class matches, come first.
void append_items(std::string& out, std::vector<CodeRange> ranges) {
  std::vector<CodeRange> items;
  for (const auto& r : ranges) {
    if (r.last < 0xD800 || r.first > 0xDFFF) {
      items.push_back(r);
      continue;
    }
    if (r.first < 0xD800) items.push_back({r.first, 0xD7FF});
    if (r.last > 0xDFFF) items.push_back({0xE000, r.last});
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const CodeRange& a, const CodeRange& b) { return a.last - a.first > b.last - b.first; });
  for (const auto& r : items) {
    append_code_point(out, r.first);
    if (r.last != r.first) {
      out += '-';
      append_code_point(out, r.last);
    }
  }
}

// Sorted, overlapping or adjacent ranges joined.
std::vector<CodeRange> merged(std::vector<CodeRange> r) {
  std::sort(r.begin(), r.end(), [](const CodeRange& a, const CodeRange& b) { return a.first < b.first; });
  std::vector<CodeRange> out;
  for (const auto& x : r) {
    if (!out.empty() && x.first <= out.back().last + 1) out.back().last = std::max(out.back().last, x.last);
    else out.push_back(x);
  }
  return out;
}

struct ClassEscape {
  std::vector<CodeRange> ranges;
  bool negated = false;
  size_t length = 0;  // of the escape in the pattern
};

// The escape at p[i] ('\\') if it is one this file rewrites.
std::optional<ClassEscape> class_escape(std::string_view p, size_t i) {
  if (i + 1 >= p.size()) return std::nullopt;
  const char e = p[i + 1];
  auto of = [](std::string_view name) {
    auto r = unicode::property(name);
    return std::vector<CodeRange>(r->begin(), r->end());
  };
  switch (e) {
    case 's': case 'S': return ClassEscape{of("White_Space"), e == 'S', 2};
    case 'd': case 'D': return ClassEscape{of("Nd"), e == 'D', 2};
    case 'h': case 'H': return ClassEscape{{{'0', '9'}, {'A', 'F'}, {'a', 'f'}}, e == 'H', 2};
    case 'p': case 'P': {
      if (i + 2 >= p.size() || p[i + 2] != '{') return std::nullopt;
      const size_t close = p.find('}', i + 3);
      if (close == std::string_view::npos) return std::nullopt;
      std::string_view name = p.substr(i + 3, close - i - 3);
      const bool caret = !name.empty() && name.front() == '^';
      if (caret) name.remove_prefix(1);
      auto r = unicode::property(name);
      if (!r) return std::nullopt;
      return ClassEscape{std::vector<CodeRange>(r->begin(), r->end()), (e == 'P') != caret, close + 1 - i};
    }
    default: return std::nullopt;
  }
}

}  // namespace

std::string bracket_class(std::span<const CodeRange> ranges) {
  std::string items;
  append_items(items, std::vector<CodeRange>(ranges.begin(), ranges.end()));
  return items.empty() ? "(?!)" : "[" + items + "]";
}

std::string expand_unicode_classes(std::string_view p) {
  std::string out;
  out.reserve(p.size());
  bool in_class = false;
  // The code points of the escapes in the current bracket class, emitted as one merged list at its
  // ']': adjacent ranges of different classes (letters next to their digits) become one item.
  std::vector<CodeRange> class_ranges;
  size_t i = 0;
  auto copy_through = [&](size_t end) {  // p[i, end) verbatim
    end = std::min(end, p.size());
    out.append(p.substr(i, end - i));
    i = end;
  };
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 < p.size() && p[i + 1] == 'Q') {  // \Q...\E: literal text
        const size_t end = p.find("\\E", i + 2);
        copy_through(end == std::string_view::npos ? p.size() : end + 2);
        continue;
      }
      auto esc = class_escape(p, i);
      if (!esc) {
        copy_through(i + (i + 1 < p.size() && p[i + 1] == 'c' ? 3 : 2));  // \cX takes the next character
        continue;
      }
      auto ranges = esc->negated ? unicode::complement(esc->ranges) : std::move(esc->ranges);
      i += esc->length;
      if (in_class) {
        class_ranges.insert(class_ranges.end(), ranges.begin(), ranges.end());
        // A '-' after a class escape is a literal; after a code point it would start a range.
        if (i + 1 < p.size() && p[i] == '-' && p[i + 1] != ']') {
          out += "\\-";
          i++;
        }
      } else {
        out += bracket_class(ranges);
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      size_t start = i + 1;
      if (start < p.size() && p[start] == '^') start++;
      if (start < p.size() && p[start] == ']') start++;  // a ']' first is a literal
      copy_through(start);
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && (p[i + 1] == ':' || p[i + 1] == '.' || p[i + 1] == '=')) {
      const size_t end = p.find(std::string{p[i + 1], ']'}, i + 2);  // POSIX [:name:]
      copy_through(end == std::string_view::npos ? p.size() : end + 2);
      continue;
    }
    if (in_class && c == ']') {
      in_class = false;
      std::string items;
      append_items(items, merged(std::move(class_ranges)));
      class_ranges.clear();
      // A '-' that ends the class is a literal: the items go before it, or it would start a range.
      size_t slashes = 0;
      while (out.size() >= 2 + slashes && out[out.size() - 2 - slashes] == '\\') slashes++;
      const bool literal_dash = !out.empty() && out.back() == '-' && slashes % 2 == 0;
      out.insert(literal_dash ? out.size() - 1 : out.size(), items);
    }
    if (!in_class && p.substr(i, 3) == "(?#") {  // a comment
      const size_t end = p.find(')', i);
      copy_through(end == std::string_view::npos ? p.size() : end + 1);
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

}  // namespace ember::llm
