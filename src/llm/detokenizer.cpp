// StreamingDetokenizer: decodes a sliding window of ids and returns the new complete text.
// Keeping the previous id as context matters for decoders whose output for a token depends on
// its position (Metaspace drops the first token's leading space).
#include "llm/tokenizer.h"
#include "llm/utf8.h"

namespace ember::llm {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

std::string StreamingDetokenizer::push(uint32_t id) {
  window_.push_back(id);
  std::string raw = tokenizer_.decode_bytes(window_, skip_special_);
  size_t complete = utf8::complete_prefix(raw);
  std::string out = complete > emitted_ ? utf8::lossy(std::string_view(raw).substr(emitted_, complete - emitted_)) : "";
  emitted_ = std::max(emitted_, complete);
  if (emitted_ == raw.size()) {
    window_.assign(1, id);
    emitted_ = tokenizer_.decode_bytes(window_, skip_special_).size();
  }
  return out;
}

std::string StreamingDetokenizer::finish() {
  std::string raw = tokenizer_.decode_bytes(window_, skip_special_);
  std::string out = raw.size() > emitted_ ? utf8::lossy(std::string_view(raw).substr(emitted_)) : "";
  window_.clear();
  emitted_ = 0;
  return out;
}

}  // namespace ember::llm
