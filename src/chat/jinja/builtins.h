// jinja2's filters and tests, and the Python str / dict / list methods templates call on values.
// Unknown names throw ember::Error naming them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace ember::llm::jinja {

using Args = std::vector<Value>;
using Kwargs = std::vector<std::pair<std::string, Value>>;

Value apply_filter(const std::string& name, const Value& subject, const Args& args, const Kwargs& kwargs, size_t line);
bool apply_test(const std::string& name, const Value& subject, const Args& args, size_t line);
Value call_method(const Value& object, const std::string& name, const Args& args, const Kwargs& kwargs, size_t line);

// Python's len(), iteration (a dict iterates its keys, a string its characters) and x[i:j:k].
size_t length_of(const Value& v, size_t line);
List items_of(const Value& v, size_t line);
Value slice_of(const Value& v, const Value& start, const Value& stop, const Value& step, size_t line);
[[noreturn]] void template_error(const std::string& what, size_t line);

}  // namespace ember::llm::jinja
