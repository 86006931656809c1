// A Hugging Face tokenizer.json tokenizer (byte-level BPE and its relatives), pure CPU.
//
//   auto tok = ember::llm::Tokenizer::from_file("model/tokenizer.json");
//   std::vector<uint32_t> ids = tok.encode("Hello", /*add_special_tokens=*/true);
//   std::string text = tok.decode(ids, /*skip_special_tokens=*/false);
//
// Pipeline (as upstream): added tokens are cut out of the raw text; the rest is normalized,
// pre-tokenized into words and run through the BPE model; the post-processor adds the
// template's special tokens when asked. Unsupported components are refused at load time with
// an ember::Error naming the JSON path and the type.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ember::llm {

class Tokenizer {
 public:
  static Tokenizer from_file(const std::string& path);
  // `origin` names the source in error messages.
  static Tokenizer from_json_text(std::string_view json, const std::string& origin = "tokenizer.json");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Special-token strings in `text` (e.g. "<|im_start|>") become their ids. `text` must be
  // valid UTF-8. Thread-safe.
  std::vector<uint32_t> encode(std::string_view text, bool add_special_tokens = false) const;

  // Each token's [begin, end) byte range in `text`, for tokenizers whose tokens spell the input
  // exactly (a ByteLevel decoder, GPT-2 style byte-level BPE, and no normalizer or one that
  // leaves this text unchanged, e.g. NFC on NFC text); nullopt for the others. As the library: a token holding part of a UTF-8 character gets the whole
  // character's range; a ByteLevel prefix space belongs to the first character; the
  // post-processor's special tokens get (0, 0).
  using Offsets = std::vector<std::pair<size_t, size_t>>;
  std::optional<Offsets> offsets(std::string_view text, const std::vector<uint32_t>& ids) const;

  // Exactly `length` ids with the post-processor's special tokens, as the library's
  // truncation + max_length padding give them (CLIP's text encoder: 77): the text's ids are cut
  // so that the specials still fit, then `pad_id` fills the rest. Without `pad_id`: the file's
  // "padding.pad_id", else the last special token the post-processor appends (CLIP:
  // <|endoftext|>), else an ember::Error. `truncated`, when given, tells whether ids were cut.
  std::vector<uint32_t> encode_padded(std::string_view text, size_t length, std::optional<uint32_t> pad_id = std::nullopt,
                                      bool* truncated = nullptr) const;

  // Invalid UTF-8 in the result is replaced by U+FFFD. Ids outside the vocabulary throw.
  std::string decode(const std::vector<uint32_t>& ids, bool skip_special_tokens = false) const;

  // The bytes before any UTF-8 repair, for streaming: an unfinished character stays as its bytes
  // (also inside a ByteFallback run). Equals `decode` wherever the result is valid UTF-8.
  std::string decode_bytes(const std::vector<uint32_t>& ids, bool skip_special_tokens) const;

  std::optional<uint32_t> token_to_id(std::string_view token) const;
  // The token's text as stored in the vocabulary (byte-level alphabet), or nullopt.
  std::optional<std::string> id_to_token(uint32_t id) const;
  bool is_special(uint32_t id) const;
  // One past the largest id of the model's vocabulary and the added tokens.
  size_t vocab_size() const;
  // The ids the post-processor puts before the text with add_special_tokens (LFM2: the BOS
  // <|startoftext|>); empty when it adds none.
  const std::vector<uint32_t>& special_prefix() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Turns ids into text as they are generated: `push` returns only complete UTF-8, holding back
// the bytes of a character whose remaining bytes come with later tokens.
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens = false);
  std::string push(uint32_t id);
  // Whatever is still held back (an unfinished character comes out as U+FFFD).
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<uint32_t> window_;  // ids since the last point where all text was emitted, plus one
  size_t emitted_ = 0;            // bytes of decode_bytes(window_) already returned
};

}  // namespace ember::llm
