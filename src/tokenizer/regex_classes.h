// Rewrites the Unicode classes of a tokenizer.json pattern into explicit code point ranges from
// the generated UCD tables (tokenizer/unicode_properties.h), so the classes mean what they mean in the
// reference library (Oniguruma at the pinned Unicode version) whatever Unicode version the
// system's PCRE2 was built with.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "tokenizer/unicode_properties.h"

namespace ember::llm {

// Rewritten, in and outside bracket classes: \p{X}, \P{X}, \p{^X} for every General_Category
// value and White_Space (names as tokenizer/unicode_properties.h matches them); \s, \S (White_Space);
// \d, \D (Nd); \h, \H (Oniguruma's hex digit, not PCRE2's horizontal space). Everything else,
// \p{X} of a property the tables do not hold included (scripts, say), is left to PCRE2.
std::string expand_unicode_classes(std::string_view pattern);

// A bracket class of exactly `ranges` (sorted, disjoint), in the form the rewrite uses; "(?!)" for
// none.
std::string bracket_class(std::span<const unicode::CodeRange> ranges);

}  // namespace ember::llm
