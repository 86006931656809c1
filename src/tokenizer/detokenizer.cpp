// StreamingDetokenizer: decodes a sliding window of ids and returns the new complete text.
// Keeping the previous id as context matters for decoders whose output for a token depends on
// its neighbours (Metaspace drops the first token's leading space; ByteFallback joins byte runs).
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace ember::llm {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

std::string StreamingDetokenizer::push(uint32_t id) {
  // A skipped token never reaches the decoder, so it must not become the context either.
  if (skip_special_ && tokenizer_.is_special(id)) return "";
  window_.push_back(id);
  std::string raw = tokenizer_.decode_bytes(window_, skip_special_);
  size_t complete = utf8::complete_prefix(raw);
  std::string out = complete > emitted_ ? utf8::lossy(std::string_view(raw).substr(emitted_, complete - emitted_)) : "";
  emitted_ = std::max(emitted_, complete);
  if (emitted_ == raw.size()) {
    // Shrink the window to this id when the id alone decodes to the tail of what was emitted;
    // otherwise keep the context.
    std::string alone = tokenizer_.decode_bytes({id}, skip_special_);
    if (std::string_view(raw).ends_with(alone)) {
      window_.assign(1, id);
      emitted_ = alone.size();
    }
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
