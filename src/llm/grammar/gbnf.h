// A GBNF grammar (the syntax of llama-server's `grammar` field) parsed into rules over Unicode
// code points. Entry point for constrained decoding: a request's GBNF text (JobRequest::grammar,
// set by response_format, the `grammar` field or tool_choice) goes through parse_gbnf, and the
// scheduler drives a grammar::Matcher (matcher.h) over the result.
//
// Syntax: `name ::= body` rules (a rule may continue over several lines; it ends where the next
// `name ::=` starts), "literals" with \n \t \r \\ \" \xHH \uHHHH \UHHHHHHHH escapes, [a-z0-9_]
// classes with ranges and [^...] negation, `.` (any code point), ( groups ), `|` alternation,
// postfix * + ? {m} {m,} {m,n}, and # comments. `root` is the start rule. Repetitions and groups
// become rules of their own, so a Grammar holds only sequences of characters and rule references.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ember::llm::grammar {

struct Element {
  enum Kind : uint8_t { End, Char, Ref };
  Kind kind = End;
  bool negated = false;                               // Char: matches code points outside `ranges`
  uint32_t rule = 0;                                  // Ref: the rule's index
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // Char: inclusive code point ranges
  bool matches(uint32_t cp) const;
};

// One alternative of a rule: its elements, then an End element (a matcher's position steps past
// the last element onto End, where the alternative is complete).
using Alternative = std::vector<Element>;

struct Rule {
  std::string name;
  std::vector<Alternative> alternatives;
};

struct Grammar {
  std::vector<Rule> rules;
  uint32_t root = 0;
};

// Throws ember::Error naming the line and column and what to fix: syntax errors, undefined or
// duplicate rules, a missing `root`, and left recursion (a rule that can reach itself without
// consuming a character, which a top-down matcher cannot run).
std::shared_ptr<const Grammar> parse_gbnf(const std::string& text);

}  // namespace ember::llm::grammar
