#include "tokenizer/utf8.h"

namespace ember::llm::utf8 {

int sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

namespace {

// Valid range of the second byte given the lead (Unicode Table 3-7); later bytes are 80..BF.
bool second_byte_ok(unsigned char lead, unsigned char b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

// How many bytes starting at `pos` form a valid prefix of one sequence (the maximal subpart);
// sets `complete` when they form the whole sequence.
size_t valid_run(std::string_view s, size_t pos, bool& complete) {
  unsigned char lead = static_cast<unsigned char>(s[pos]);
  int len = sequence_length(lead);
  complete = false;
  if (len == 0) return 0;
  if (len == 1) {
    complete = true;
    return 1;
  }
  size_t got = 1;
  while (got < static_cast<size_t>(len) && pos + got < s.size()) {
    unsigned char b = static_cast<unsigned char>(s[pos + got]);
    bool ok = got == 1 ? second_byte_ok(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    got++;
  }
  complete = got == static_cast<size_t>(len);
  return got;
}

}  // namespace

char32_t next(std::string_view s, size_t& pos) {
  unsigned char c = static_cast<unsigned char>(s[pos]);
  int len = sequence_length(c);
  if (len <= 1) {
    pos++;
    return c;
  }
  char32_t cp = c & (0xFF >> (len + 1));
  for (int i = 1; i < len; i++) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  pos += len;
  return cp;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t first_invalid(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      pos++;
      continue;
    }
    bool complete;
    size_t n = valid_run(s, pos, complete);
    if (!complete) return pos;
    pos += n;
  }
  return std::string_view::npos;
}

std::string lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    bool complete;
    size_t n = valid_run(s, pos, complete);
    if (complete) {
      out.append(s.substr(pos, n));
      pos += n;
    } else {
      out += "\xEF\xBF\xBD";
      pos += n == 0 ? 1 : n;
    }
  }
  return out;
}

size_t complete_prefix(std::string_view s) {
  // Only the last sequence can be unfinished; its lead is at most 3 bytes back.
  size_t start = s.size() >= 3 ? s.size() - 3 : 0;
  for (size_t pos = s.size(); pos-- > start;) {
    unsigned char c = static_cast<unsigned char>(s[pos]);
    if (c >= 0x80 && c <= 0xBF) continue;  // continuation byte: keep looking for its lead
    bool complete;
    size_t n = valid_run(s, pos, complete);
    // Unfinished only when the run reaches the end and the lead wants more bytes.
    if (!complete && n > 0 && pos + n == s.size()) return pos;
    return s.size();
  }
  return s.size();
}

}  // namespace ember::llm::utf8
