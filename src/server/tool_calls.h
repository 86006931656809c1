// LFM2's tool-call syntax, both ways (docs/tool-calling.md):
//   <|tool_call_start|>[get_weather(city="Paris", days=3), math.add(a=1.5, b=None)]<|tool_call_end|>
// The list holds Python calls with keyword arguments whose values are Python literals: strings in
// single or double quotes (with Python's escapes), numbers, True/False/None, lists, tuples and
// dicts, nested. The JSON form LFM2 writes when told to ("[{"name": ..., "arguments": {...}}]")
// is read too, as are JSON's true/false/null. Anything else is malformed: parse_lfm2_calls says
// why and the caller returns the text as it came.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::server {

inline constexpr std::string_view kToolCallStart = "<|tool_call_start|>";
inline constexpr std::string_view kToolCallEnd = "<|tool_call_end|>";

struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // keyword -> value, in call order
};

// The text between the two markers. nullopt when it is not a non-empty list of calls (then
// *error, when given, says what was wrong and where).
std::optional<std::vector<ToolCall>> parse_lfm2_calls(std::string_view text, std::string* error = nullptr);

// The inverse, for assistant turns fed back to the model: "[name(key=value, ...), ...]" with
// values written as Python literals (strings double-quoted with JSON's escapes, which Python reads
// alike; True/False/None).
std::string format_lfm2_calls(const std::vector<ToolCall>& calls);
std::string python_literal(const nlohmann::ordered_json& value);

}  // namespace ember::server
