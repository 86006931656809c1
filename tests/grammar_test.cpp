// The grammar engine on the CPU: the GBNF parser (through what it accepts), the token matcher
// (tokens spanning several grammar elements, UTF-8 split over tokens, the end of generation,
// the mask cache), and random walks that must always end in text the grammar accepts.
#include <gtest/gtest.h>

#include <random>

#include "common/error.h"
#include "llm/grammar/gbnf.h"
#include "llm/grammar/matcher.h"

namespace ember::llm::grammar {
namespace {

bool accepts(const std::string& gbnf, const std::string& text) {
  auto g = parse_gbnf(gbnf);
  Matcher m(g, std::make_shared<TokenTrie>(std::vector<std::string>{"x"}));
  return m.accept_bytes(text) && m.can_end();
}

std::string parse_error(const std::string& gbnf) {
  try {
    parse_gbnf(gbnf);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gbnf, LiteralsAndEscapes) {
  EXPECT_TRUE(accepts(R"(root ::= "ab" "c")", "abc"));
  EXPECT_FALSE(accepts(R"(root ::= "ab" "c")", "ab"));
  EXPECT_FALSE(accepts(R"(root ::= "ab" "c")", "abcd"));
  EXPECT_TRUE(accepts(R"(root ::= "\"\\\n\t\x41\u00e9")", "\"\\\n\tA\xc3\xa9"));
  EXPECT_TRUE(accepts("root ::= \"h\xc3\xa9\"", "h\xc3\xa9"));  // UTF-8 in a literal
}

TEST(Gbnf, CharacterClasses) {
  const std::string g = R"(root ::= [a-c0-9_] [^x-z\]])";
  EXPECT_TRUE(accepts(g, "b!"));
  EXPECT_TRUE(accepts(g, "7q"));
  EXPECT_TRUE(accepts(g, "_\xe2\x82\xac"));  // a negated class takes any other code point
  EXPECT_FALSE(accepts(g, "dq"));
  EXPECT_FALSE(accepts(g, "ay"));
  EXPECT_FALSE(accepts(g, "a]"));
  EXPECT_TRUE(accepts(R"(root ::= . .)", "\xc3\xa9z"));
}

TEST(Gbnf, GroupsAlternationAndRepetition) {
  const std::string g = "# a comment\nroot ::= ( \"a\" | \"bc\" )+ \"-\" d? e*\nd ::= \"d\"\n  | \"D\"  # continued\ne ::= [0-9]\n";
  EXPECT_TRUE(accepts(g, "a-"));
  EXPECT_TRUE(accepts(g, "abca-D"));
  EXPECT_TRUE(accepts(g, "bc-d123"));
  EXPECT_FALSE(accepts(g, "-"));
  EXPECT_FALSE(accepts(g, "b-"));
  EXPECT_FALSE(accepts(g, "a-dd"));
  const std::string r = R"(root ::= "x"{2,3} "y"{2} "z"{1,} "w"{0,1} "ab"{2})";
  EXPECT_TRUE(accepts(r, "xxyyzabab"));
  EXPECT_TRUE(accepts(r, "xxxyyzzzwabab"));
  EXPECT_FALSE(accepts(r, "xyyzabab"));
  EXPECT_FALSE(accepts(r, "xxxxyyzabab"));
  EXPECT_FALSE(accepts(r, "xxyyyzabab"));
  EXPECT_FALSE(accepts(r, "xxyyabab"));
  EXPECT_FALSE(accepts(r, "xxyyzaba"));
}

TEST(Gbnf, RecursionThroughACharacter) {
  const std::string g = "root ::= \"(\" root \")\" | \"\"";
  EXPECT_TRUE(accepts(g, ""));
  EXPECT_TRUE(accepts(g, "((()))"));
  EXPECT_FALSE(accepts(g, "(()"));
}

TEST(Gbnf, ErrorsNameTheLineAndTheProblem) {
  EXPECT_NE(parse_error("a ::= \"x\"").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(parse_error("root ::= b").find("rule 'b' is used but never defined"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"x\"\nroot ::= \"y\"").find("defined twice"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"x\"\nb ::= \"unterminated").find("line 2 column 7: unterminated literal"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [a-").find("unterminated character class"), std::string::npos);
  EXPECT_NE(parse_error("root ::= (\"a\"").find("expected ')'"), std::string::npos);
  EXPECT_NE(parse_error("root ::= * \"a\"").find("follows nothing"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"a\"{3,1}").find("n < m"), std::string::npos);
  EXPECT_NE(parse_error("root ::= [z-a]").find("backwards"), std::string::npos);
  EXPECT_NE(parse_error("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(parse_error("root ::= x \"a\"\nx ::= \"\" | root").find("left-recursive"), std::string::npos);
  EXPECT_NE(parse_error("root ::= root \"a\"").find("left-recursive"), std::string::npos);
  EXPECT_EQ(parse_error("root ::= \"a\" root | \"\""), "");
}

// A vocabulary with tokens that span several grammar elements and split UTF-8 characters.
std::shared_ptr<TokenTrie> test_vocab() {
  return std::make_shared<TokenTrie>(std::vector<std::string>{
      "",                   // 0: a special token (never grammar output)
      "a", "b", "ab",       // 1..3
      "{\"", "\"}", "\"",   // 4..6: spans a brace and a quote
      "\xc3\xa9",           // 7: é, two bytes
      "\xc3",               // 8: a lead byte alone
      "\xa9", "\x80",       // 9, 10: continuation bytes (é's, and U+00C0's)
      "ba", "abab", "c",    // 11..13
  });
}

bool allowed(Matcher& m, uint32_t t) { return (m.allowed()[t / 32] >> (t % 32)) & 1; }

std::vector<uint32_t> allowed_ids(Matcher& m, uint32_t vocab) {
  std::vector<uint32_t> ids;
  for (uint32_t t = 0; t < vocab; t++)
    if (allowed(m, t)) ids.push_back(t);
  return ids;
}

TEST(GrammarMatcher, TokensSpanningElements) {
  auto vocab = test_vocab();
  Matcher m(parse_gbnf(R"(root ::= "{\"" ("a" | "b")* "\"}")"), vocab);
  EXPECT_EQ(allowed_ids(m, vocab->vocab()), (std::vector<uint32_t>{4}));
  EXPECT_FALSE(m.can_end());
  ASSERT_TRUE(m.accept(4));
  EXPECT_EQ(allowed_ids(m, vocab->vocab()), (std::vector<uint32_t>{1, 2, 3, 5, 6, 11, 12}));  // 6: '"' may start '"}'
  EXPECT_FALSE(m.accept(13));  // refused, state unchanged
  ASSERT_TRUE(m.accept(12));
  ASSERT_TRUE(m.accept(5));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.done());
  EXPECT_TRUE(allowed_ids(m, vocab->vocab()).empty());
  EXPECT_FALSE(m.accept(0));  // special tokens are never grammar output
}

TEST(GrammarMatcher, Utf8SplitAcrossTokens) {
  auto vocab = test_vocab();
  // [à-ÿ] is U+00E0..U+00FF: lead byte C3 may start one; of the continuations only A9 (é) fits here.
  Matcher m(parse_gbnf(R"(root ::= [à-ÿ] "c")"), vocab);
  EXPECT_EQ(allowed_ids(m, vocab->vocab()), (std::vector<uint32_t>{7, 8}));
  ASSERT_TRUE(m.accept(8));
  EXPECT_FALSE(m.can_end());
  EXPECT_EQ(allowed_ids(m, vocab->vocab()), (std::vector<uint32_t>{9}));
  EXPECT_FALSE(m.accept(10));  // C3 80 is U+00C0, outside the class
  ASSERT_TRUE(m.accept(9));
  EXPECT_EQ(allowed_ids(m, vocab->vocab()), (std::vector<uint32_t>{13}));
  // A class that excludes every code point C3 can start allows neither é nor the lone lead byte.
  Matcher n(parse_gbnf(R"(root ::= [^\u00c0-\u00ff])"), vocab);
  const auto ids = allowed_ids(n, vocab->vocab());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 7u) + std::count(ids.begin(), ids.end(), 8u), 0);
  EXPECT_TRUE(std::count(ids.begin(), ids.end(), 1u));
}

TEST(GrammarMatcher, EndOnlyWhereTheGrammarEnds) {
  auto vocab = test_vocab();
  Matcher m(parse_gbnf(R"(root ::= "a" "b"?)"), vocab);
  EXPECT_FALSE(m.can_end());
  ASSERT_TRUE(m.accept(1));
  EXPECT_TRUE(m.can_end());   // "a" is complete
  EXPECT_FALSE(m.done());     // and "b" may still follow
  EXPECT_EQ(allowed_ids(m, vocab->vocab()), (std::vector<uint32_t>{2}));
  ASSERT_TRUE(m.accept(2));
  EXPECT_TRUE(m.done());
}

TEST(GrammarMatcher, CachedMasksEqualFreshOnes) {
  auto vocab = test_vocab();
  auto g = parse_gbnf(R"(root ::= ("a" | "b" | "\u00e9")* "c")");
  auto cache = std::make_shared<MaskCache>();
  Matcher a(g, vocab, cache);
  std::mt19937 rng(3);
  std::string history;
  for (int step = 0; step < 40; step++) {
    Matcher fresh(g, vocab);  // a cache of its own: this mask comes from a trie walk
    ASSERT_TRUE(fresh.accept_bytes(history));
    const auto mask = a.allowed();
    ASSERT_EQ(mask, fresh.allowed()) << "after '" << history << "'";
    std::vector<uint32_t> ids;
    for (uint32_t t = 0; t < vocab->vocab(); t++)
      if ((mask[t / 32] >> (t % 32)) & 1) ids.push_back(t);
    ASSERT_FALSE(ids.empty());
    const uint32_t pick = ids[rng() % ids.size()];
    ASSERT_TRUE(a.accept(pick));
    history += vocab->bytes(pick);
    if (pick == 13) break;
  }
  EXPECT_GT(cache->masks(), 0u);
  EXPECT_LE(cache->masks(), 3u);  // few states: the loop, after a lead byte, the end
}

// Random walks: pick any allowed token until the grammar is done. At every step the mask (a trie
// walk) must equal token-by-token matching, and the text must be accepted by a fresh matcher fed
// byte by byte.
TEST(GrammarMatcher, RandomWalksAlwaysEndInTheGrammar) {
  std::vector<std::string> toks = {""};
  for (int c = 32; c < 127; c++) toks.push_back(std::string(1, static_cast<char>(c)));
  for (const char* t : {"\"a", "\",", "[\"", "\"]", "ab\"", "1,", ",2", "]]", "\xc3", "\xa9", "\xc3\xa9\""}) toks.push_back(t);
  auto vocab = std::make_shared<TokenTrie>(toks);
  const std::string gbnf = R"(root ::= "[" ( item ( "," item ){0,3} )? "]"
item ::= "\"" [a-c\u00e9]{0,3} "\"" | [1-9] | root)";
  auto g = parse_gbnf(gbnf);
  std::mt19937 rng(11);
  int finished = 0;
  for (int walk = 0; walk < 200; walk++) {
    Matcher m(g, vocab);
    std::string text;
    for (int step = 0; step < 200 && !m.done(); step++) {
      const auto& mask = m.allowed();
      std::vector<uint32_t> ids;
      for (uint32_t t = 0; t < vocab->vocab(); t++)
        if ((mask[t / 32] >> (t % 32)) & 1) ids.push_back(t);
      for (uint32_t t = 0; t < vocab->vocab(); t++) {  // the trie walk agrees with token-by-token matching
        Matcher probe = m;
        ASSERT_EQ(probe.accept(t), ((mask[t / 32] >> (t % 32)) & 1) != 0) << "token " << t << " after '" << text << "'";
      }
      if (m.can_end() && rng() % 4 == 0) break;
      ASSERT_FALSE(ids.empty()) << text;
      const uint32_t pick = ids[rng() % ids.size()];
      ASSERT_TRUE(m.accept(pick));
      text += vocab->bytes(pick);
    }
    if (!m.can_end()) continue;  // ran out of steps (deep nesting)
    finished++;
    Matcher check(g, vocab);
    EXPECT_TRUE(check.accept_bytes(text) && check.can_end()) << text;
  }
  EXPECT_GT(finished, 150);
}

}  // namespace
}  // namespace ember::llm::grammar
