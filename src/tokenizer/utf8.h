// UTF-8 helpers the tokenizer needs: code point iteration, validation, and the lossy
// conversion Hugging Face applies to decoded bytes (each maximal invalid subpart -> U+FFFD).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::llm::utf8 {

// Length of the UTF-8 sequence a lead byte announces (1..4), or 0 for a byte that cannot lead.
int sequence_length(unsigned char lead);

// Decodes the code point at `pos` (which must start a valid sequence); advances `pos`.
char32_t next(std::string_view s, size_t& pos);

void append(std::string& out, char32_t cp);

// Offset of the first byte that is not part of valid UTF-8, or npos when all is valid.
size_t first_invalid(std::string_view s);

// Replaces invalid sequences with U+FFFD the way Rust's String::from_utf8_lossy does.
std::string lossy(std::string_view bytes);

// Length of the longest prefix of `bytes` after which no sequence is left unfinished: a trailing
// sequence that is still a valid beginning of a longer one is held back.
size_t complete_prefix(std::string_view bytes);

}  // namespace ember::llm::utf8
