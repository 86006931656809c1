// A small Jinja interpreter for Hugging Face chat templates (tokenizer_config.json's
// "chat_template"), configured as transformers configures jinja2: trim_blocks, lstrip_blocks,
// loop controls, `raise_exception(msg)`, `tojson` without key sorting or ASCII escaping.
//
//   jinja::Template t(source);                 // throws ember::Error on syntax it does not know
//   std::string prompt = t.render(context);    // context: {"messages": [...], "add_generation_prompt": true, ...}
//
// Supported: {{ }}, {% if/elif/else %}, {% for a[, b] in x [if c] %} with loop.* and else,
// {% set x = ... %} / {% set ns.x = ... %}, namespace(), macros, break/continue, comments,
// whitespace control; Python-like operators, slices, tests (defined, none, string, ...),
// filters (trim, tojson, length, upper, lower, default, join, items, first, last, ...) and the
// str/dict/list methods chat templates call (startswith, strip, split, replace, get, items, ...).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace ember::llm::jinja {

struct Node;

class Template {
 public:
  explicit Template(const std::string& source);
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // `context` is a JSON object whose keys become template variables. raise_exception(...)
  // inside the template throws ember::Error with the template's message.
  std::string render(const nlohmann::json& context) const;
  // The same with the context's key order kept: dicts iterate (and tojson writes them) in the
  // order the client wrote them, as Python's do.
  std::string render(const nlohmann::ordered_json& context) const;

 private:
  std::shared_ptr<std::vector<Node>> body_;
};

}  // namespace ember::llm::jinja
