#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace ember::llm::byte_level {

namespace {

struct Tables {
  std::array<char32_t, 256> chars{};
  std::array<std::string, 256> spelled;  // UTF-8 of chars[b]
  std::array<int, 324> bytes{};          // every alphabet code point is < 256 + 68
  Tables() {
    bytes.fill(-1);
    // Printable Latin-1 bytes stand for themselves; the rest take 256, 257, ... in byte order.
    char32_t next_extra = 256;
    for (int b = 0; b < 256; b++) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      chars[b] = printable ? static_cast<char32_t>(b) : next_extra++;
      bytes[chars[b]] = b;
      utf8::append(spelled[b], chars[b]);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

char32_t char_of_byte(uint8_t b) { return tables().chars[b]; }

int byte_of_char(char32_t cp) {
  const auto& t = tables();
  return cp < t.bytes.size() ? t.bytes[cp] : -1;
}

void encode(std::string_view text, std::string& out) {
  const auto& t = tables();
  for (unsigned char c : text) out += t.spelled[c];
}

}  // namespace ember::llm::byte_level
