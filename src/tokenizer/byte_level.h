// GPT-2's byte-level alphabet: every byte maps to one printable code point, so BPE works on
// text made only of "visible" characters (space becomes U+0120 'Ġ', newline U+010A 'Ċ').
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ember::llm::byte_level {

// The code point byte `b` is written as.
char32_t char_of_byte(uint8_t b);

// The byte a code point stands for, or -1 when the code point is not in the alphabet.
int byte_of_char(char32_t cp);

// Appends the alphabet spelling of every byte of `text` to `out`.
void encode(std::string_view text, std::string& out);

// The GPT-2 pre-tokenizer pattern ByteLevel uses when `use_regex` is true.
extern const char* const kGpt2Pattern;

}  // namespace ember::llm::byte_level
