// tokenizer.json's "decoder": ByteLevel, ByteFallback, Fuse, Metaspace, Replace, Strip and
// Sequence. Decoding yields raw bytes; the caller turns them into text (lossy UTF-8), which lets
// the streaming detokenizer hold back a character split across tokens.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::llm {

class Decoder {
 public:
  // `spec` is the JSON value of "decoder" (null: tokens joined with spaces, as upstream).
  static Decoder from_json(const nlohmann::json& spec, const std::string& where);

  // The bytes for a run of tokens (possibly invalid or unfinished UTF-8). Upstream's ByteFallback
  // turns a run of <0xNN> tokens that is not valid UTF-8 into one U+FFFD per token; with
  // `raw_byte_runs` the bytes are kept instead, so that a run still being generated can be
  // completed by later tokens (the streaming detokenizer needs that).
  std::string decode(std::vector<std::string> tokens, bool raw_byte_runs = false) const;

 private:
  enum class Kind { ByteLevel, ByteFallback, Fuse, Metaspace, Replace, Strip };
  struct Step {
    Kind kind;
    std::string pattern, content;  // Replace; Metaspace: replacement char in `pattern`
    bool strip_first_space = false;  // Metaspace: prepend_scheme != never (add_prefix_space)
    size_t strip_start = 0, strip_stop = 0;
  };
  void add(const nlohmann::json& spec, const std::string& where);
  std::vector<Step> steps_;
  bool none_ = true;
};

}  // namespace ember::llm
