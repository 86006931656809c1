// Splits a chat template into text and the tokens inside {{ }} / {% %}, applying whitespace
// control the way transformers configures jinja2: `-` strips all whitespace on that side,
// trim_blocks drops the newline after a block tag, lstrip_blocks drops the indentation before
// one (`+` turns either off), comments vanish, and one trailing newline of the template is dropped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ember::llm::jinja {

struct Token {
  enum class Kind { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };
  Kind kind;
  std::string text;  // Text/Name/Op: the characters; String: the decoded value; Int/Float: the digits
  size_t line = 1;
};

std::vector<Token> lex(std::string_view source);

}  // namespace ember::llm::jinja
