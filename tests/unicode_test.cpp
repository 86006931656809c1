// The tokenizer's Unicode data at the reference library's versions, not PCRE2's or utf8proc's:
// regex classes at 16.0 (the tables, the pattern rewrite, and every code point of each class
// through the compiled PCRE2 pattern) and lowercase at 17.0. The tokenizer goldens
// (tokenizer_test.cpp) hold the end-to-end check on Unicode 15 and 16 text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "tokenizer/regex.h"
#include "tokenizer/regex_classes.h"
#include "tokenizer/unicode_properties.h"
#include "tokenizer/utf8.h"

using namespace ember;
namespace unicode = llm::unicode;

namespace {

std::span<const unicode::CodeRange> prop(const std::string& name) {
  auto r = unicode::property(name);
  EXPECT_TRUE(r.has_value()) << name;
  return r ? *r : std::span<const unicode::CodeRange>();
}

// Every matched substring of `text`.
std::vector<std::string> matches(const std::string& pattern, const std::string& text) {
  std::vector<std::string> out;
  llm::Regex(pattern, "test").find_all(text, [&](size_t a, size_t b) { out.push_back(text.substr(a, b - a)); });
  return out;
}

std::string utf8_of(std::u32string_view s) {
  std::string out;
  for (char32_t c : s) llm::utf8::append(out, c);
  return out;
}

}  // namespace

TEST(UnicodeProperties, TablesAreUnicode16) {
  EXPECT_EQ(unicode::version(), "16.0.0");
  const auto L = prop("L"), Nd = prop("Nd"), ws = prop("White_Space");
  EXPECT_TRUE(unicode::contains(L, U'a'));
  EXPECT_TRUE(unicode::contains(L, 0x4E00));
  EXPECT_TRUE(unicode::contains(L, 0x11F04));   // Kawi letter (15.0)
  EXPECT_TRUE(unicode::contains(L, 0x2EBF0));   // CJK Extension I (15.1)
  EXPECT_TRUE(unicode::contains(L, 0x10D50));   // Garay capital letter (16.0)
  EXPECT_TRUE(unicode::contains(L, 0x1C89));    // Cyrillic capital TJE (16.0)
  EXPECT_FALSE(unicode::contains(L, 0x11DB0));  // Tolong Siki (17.0): unassigned at 16
  EXPECT_FALSE(unicode::contains(L, U'1'));
  EXPECT_TRUE(unicode::contains(Nd, 0x10D40));  // Garay digit zero (16.0)
  EXPECT_TRUE(unicode::contains(Nd, 0x16D70));  // Kirat Rai digit zero (16.0)
  EXPECT_FALSE(unicode::contains(Nd, 0x11DE0));  // Tolong Siki digit (17.0)
  EXPECT_TRUE(unicode::contains(prop("Mn"), 0x0897));  // Arabic pepet (16.0)
  EXPECT_TRUE(unicode::contains(prop("So"), 0x1FAE9));  // face with bags under eyes (16.0)
  // White_Space: no U+180E since Unicode 6.3 (PCRE2's \s still has it), but U+0085 and U+00A0.
  EXPECT_FALSE(unicode::contains(ws, 0x180E));
  EXPECT_TRUE(unicode::contains(ws, 0x85));
  EXPECT_TRUE(unicode::contains(ws, 0xA0));
  EXPECT_EQ(unicode::contains(prop("Cf"), 0x180E), true);
}

TEST(UnicodeProperties, LowercaseIsRustsCharToLowercase) {
  EXPECT_EQ(unicode::std_version(), "17.0.0");
  auto lower = [](char32_t c) {
    const auto l = unicode::to_lowercase(c);
    return std::u32string(l.c, l.c + l.count);
  };
  EXPECT_EQ(lower(U'A'), U"a");
  EXPECT_EQ(lower(U'a'), U"a");
  EXPECT_EQ(lower(U'1'), U"1");
  EXPECT_EQ(lower(0x130), U"i\u0307");               // SpecialCasing, unconditional
  EXPECT_EQ(lower(0x3A3), U"\u03C3");                // no final-sigma context per character
  EXPECT_EQ(lower(0x10D50), U"\U00010D70");          // Garay (16.0), which utf8proc 2.8 does not know
  EXPECT_EQ(lower(0x1C89), U"\u1C8A");               // Cyrillic TJE (16.0)
  EXPECT_EQ(lower(0xA7CE), U"\uA7CF");               // Latin (17.0)
  EXPECT_EQ(lower(0x1E9E), U"\u00DF");               // capital sharp s
}

TEST(UnicodeProperties, StdNumericIsNumberAt17) {
  const auto n = unicode::std_numeric();
  EXPECT_TRUE(unicode::contains(n, U'7'));
  EXPECT_TRUE(unicode::contains(n, 0x10D40));   // Garay digit (16.0)
  EXPECT_TRUE(unicode::contains(n, 0x11DE0));   // Tolong Siki digit (17.0): numeric to Rust, not to Oniguruma at 16
  EXPECT_FALSE(unicode::contains(prop("N"), 0x11DE0));
  EXPECT_FALSE(unicode::contains(n, U'x'));
}

TEST(UnicodeProperties, NamesMatchLooselyAsInOniguruma) {
  const auto Lu = prop("Lu");
  for (const char* name : {"Uppercase_Letter", "uppercase letter", "UPPERCASE-LETTER", "lu", "LU"}) {
    auto r = unicode::property(name);
    ASSERT_TRUE(r.has_value()) << name;
    EXPECT_EQ(r->data(), Lu.data()) << name;
  }
  EXPECT_EQ(unicode::property("L&")->data(), prop("LC").data());
  EXPECT_FALSE(unicode::property("Han").has_value());  // scripts are left to PCRE2
  EXPECT_FALSE(unicode::property("").has_value());
}

TEST(UnicodeProperties, ComplementCoversTheRest) {
  const std::vector<unicode::CodeRange> r{{0x41, 0x5A}, {0x61, 0x7A}};
  const auto c = unicode::complement(r);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].first, 0u);
  EXPECT_EQ(c[0].last, 0x40u);
  EXPECT_EQ(c[1].first, 0x5Bu);
  EXPECT_EQ(c[1].last, 0x60u);
  EXPECT_EQ(c[2].first, 0x7Bu);
  EXPECT_EQ(c[2].last, 0x10FFFFu);
  EXPECT_TRUE(unicode::complement(unicode::complement(r)).size() == 2);
}

TEST(RegexClasses, EveryCodePointOfEachClassAsTheTablesSay) {
  // All scalar values in one subject; each class, plain, negated and inside a bracket class, must
  // match exactly the code points the table holds (or does not).
  std::string text;
  std::vector<char32_t> cps;
  for (char32_t c = 1; c <= 0x10FFFF; c++) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    cps.push_back(c);
  }
  std::vector<size_t> starts;
  for (char32_t c : cps) {
    starts.push_back(text.size());
    llm::utf8::append(text, c);
  }
  struct Case {
    std::string pattern, table;
    bool negated;
  };
  const std::vector<Case> cases{{"\\p{L}", "L", false},         {"\\P{L}", "L", true},        {"[\\p{N}]", "N", false},
                                {"[^\\p{P}]", "P", true},       {"\\p{S}", "S", false},       {"[x\\p{^M}]", "M", true},
                                {"\\s", "White_Space", false},  {"\\S", "White_Space", true}, {"[\\S]", "White_Space", true},
                                {"\\d", "Nd", false},           {"[^\\D]", "Nd", false},      {"\\p{Lo}", "Lo", false},
                                {"\\p{Other_Number}", "No", false}};
  for (const auto& k : cases) {
    SCOPED_TRACE(k.pattern);
    const auto table = prop(k.table);
    std::vector<char> hit(cps.size(), 0);
    size_t i = 0, wrong = 0;
    llm::Regex(k.pattern, "test").find_all(text, [&](size_t a, size_t) {
      while (starts[i] < a) i++;
      hit[i] = 1;
    });
    for (size_t j = 0; j < cps.size(); j++) {
      bool want = unicode::contains(table, cps[j]) != k.negated;
      if (k.pattern == "[x\\p{^M}]" && cps[j] == U'x') want = true;
      if (bool(hit[j]) != want && wrong++ < 5) ADD_FAILURE() << "U+" << std::hex << uint32_t(cps[j]) << " matched " << int(hit[j]);
    }
    EXPECT_EQ(wrong, 0u);
  }
}

TEST(RegexClasses, TextFromUnicode15And16SplitsByItsProperties) {
  // Garay letters and digits (16.0): one \p{L}+ run and one \p{N}+ run; U+180E is no white space.
  const std::string garay = utf8_of(U"\U00010D50\U00010D51\U00010D52");
  const std::string digits = utf8_of(U"\U00010D40\U00010D41");
  EXPECT_EQ(matches("\\p{L}+|\\p{N}+", "x" + garay + " " + digits), (std::vector<std::string>{"x" + garay, digits}));
  EXPECT_EQ(matches("\\s+", utf8_of(U"a\u180Eb \u00A0c")), (std::vector<std::string>{utf8_of(U" \u00A0")}));
  EXPECT_EQ(matches("[^\\s\\p{L}\\p{N}]+", utf8_of(U"\U0001FAE9\U0001FAE9 ok")), (std::vector<std::string>{utf8_of(U"\U0001FAE9\U0001FAE9")}));
  // Oniguruma's \h is a hex digit, not PCRE2's horizontal space.
  EXPECT_EQ(matches("\\h+", "x 0fA9g\t"), (std::vector<std::string>{"0fA9"}));
  EXPECT_EQ(matches("\\H+", "ab\tzz"), (std::vector<std::string>{"\tzz"}));
}

TEST(RegexClasses, OtherSyntaxIsLeftAlone) {
  using llm::expand_unicode_classes;
  EXPECT_EQ(expand_unicode_classes("\\Q\\p{L}\\s\\E"), "\\Q\\p{L}\\s\\E");       // literal text
  EXPECT_EQ(expand_unicode_classes("\\\\p{L}"), "\\\\p{L}");                     // an escaped backslash, then "p{L}"
  EXPECT_EQ(expand_unicode_classes("(?#\\p{L})a"), "(?#\\p{L})a");               // a comment
  EXPECT_EQ(expand_unicode_classes("\\p{Han}\\x{41}\\w\\b"), "\\p{Han}\\x{41}\\w\\b");  // not in the tables
  EXPECT_EQ(expand_unicode_classes("[[:alpha:]]"), "[[:alpha:]]");
  EXPECT_EQ(matches("\\p{Zl}|[\\p{Zp}a]", utf8_of(U"\u2028b\u2029a")), (std::vector<std::string>{"\u2028", "\u2029", "a"}));
  // Still the same language: a ']' first in a class is a literal; a '-' after a class escape too.
  EXPECT_EQ(matches("[]\\p{N}]+", "a]1]b"), (std::vector<std::string>{"]1]"}));
  EXPECT_EQ(matches("[\\s-z]+", "a -z-b"), (std::vector<std::string>{" -z-"}));
  EXPECT_EQ(matches("[\\p{N}a-]+", "a-1b-"), (std::vector<std::string>{"a-1", "-"}));
  EXPECT_EQ(matches("[-\\p{Nd}]+", "x-12y"), (std::vector<std::string>{"-12"}));
  EXPECT_EQ(matches("[\\p{Nd}\\-]+", "x-12y"), (std::vector<std::string>{"-12"}));
  EXPECT_EQ(matches("[^\\p{L}\\s]+", "ab, 12!c"), (std::vector<std::string>{",", "12!"}));
  EXPECT_EQ(matches("\\p{Lu}\\p{^Lu}+", "xABcd"), (std::vector<std::string>{"Bcd"}));
  EXPECT_EQ(matches("(?i:'s)", "'S 's"), (std::vector<std::string>{"'S", "'s"}));
  EXPECT_THROW(llm::Regex("[\\p{L}", "test"), Error);
}
