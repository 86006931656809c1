// JSON text in and out for ember's own files: parse errors name the file with line and column.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ember::formats {

// Key order is kept, so a file read and written back keeps its layout.
using OrderedJson = nlohmann::ordered_json;

// Parses `text`; a syntax error becomes an ember::Error "<where>: line L, column C: ...".
OrderedJson parse_json_text(const std::string& text, const std::string& where);

// "line L, column C" of byte `pos` in `text` (1-based).
std::string json_line_column(const std::string& text, size_t pos);

}  // namespace ember::formats
