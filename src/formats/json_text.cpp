#include "formats/json_text.h"

#include "common/error.h"

namespace ember::formats {

std::string json_line_column(const std::string& text, size_t pos) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < text.size(); i++) {
    if (text[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

OrderedJson parse_json_text(const std::string& text, const std::string& where) {
  try {
    return OrderedJson::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann counts the byte at which it gave up (1-based); point at that character.
    size_t pos = e.byte > 0 ? e.byte - 1 : 0;
    std::string msg = e.what();
    // Keep only nlohmann's explanation, without its own "at line ..." prefix.
    size_t colon = msg.find(": ", msg.find("parse error"));
    std::string detail = colon == std::string::npos ? msg : msg.substr(colon + 2);
    throw Error("malformed JSON: " + detail, where + ", " + json_line_column(text, pos),
                "fix the JSON syntax at that position");
  }
}

}  // namespace ember::formats
