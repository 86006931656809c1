// The parsed form of a chat template: statements (text, {{ }}, if, for, set, macro, break,
// continue) holding expression trees.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace ember::llm::jinja {

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal, Name, Attr, Index, Slice, Call, Filter, Test, Not, Neg, Binary, And, Or, Ternary, ListLit, DictLit
  };
  Kind kind;
  size_t line = 0;
  std::string name;           // Name; Attr: attribute; Filter/Test: its name; Binary: the operator
  Value literal;              // Literal
  std::vector<ExprPtr> args;  // operands: [object, ...] or positional arguments after the subject
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;       // Test: `is not`; Binary `in`: `not in`
};

struct Node;
using Body = std::vector<Node>;

struct Node {
  enum class Kind { Text, Output, If, For, Set, Macro, Break, Continue };
  Kind kind;
  size_t line = 0;
  std::string text;                                  // Text
  ExprPtr expr;                                      // Output; For: iterable; Set: value
  std::vector<std::pair<ExprPtr, Body>> branches;    // If: (condition, body)...
  Body body, else_body;                              // For / Macro body; If / For else
  std::vector<std::string> targets;                  // For: loop variables; Set: name [, attribute]
  ExprPtr filter;                                    // For: `if` clause
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro: name and default (may be null)
};

// Throws ember::Error naming the line for syntax the interpreter does not know.
Body parse(const std::string& source);

}  // namespace ember::llm::jinja
