// The BPE model of tokenizer.json: vocabulary, ranked merges (as "a b" strings or [a, b]
// pairs), byte_fallback, ignore_merges, unk_token/fuse_unk and subword prefix/suffix.
// Merging follows upstream's order: lowest rank first, leftmost among equal ranks.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::llm {

// Hash that lets unordered_map<std::string, ...> be searched with a string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // `spec` is the JSON value of "model"; throws ember::Error for malformed entries.
  static BpeModel from_json(const nlohmann::json& spec, const std::string& where);
  BpeModel() = default;
  BpeModel(BpeModel&& other) noexcept;
  BpeModel& operator=(BpeModel&& other) noexcept;

  // Appends the ids of one pre-tokenized word. Thread-safe.
  void tokenize(std::string_view word, std::vector<uint32_t>& ids) const;

  std::optional<uint32_t> id_of(std::string_view token) const;
  // The token's text, or nullptr when no vocabulary entry has this id.
  const std::string* token_of(uint32_t id) const;
  // One past the largest id in the vocabulary.
  size_t id_limit() const { return tokens_.size(); }

 private:
  struct Merge {
    uint32_t rank, id;
  };
  static uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }
  void merge_word(std::string_view word, std::vector<uint32_t>& ids) const;

  TokenMap vocab_;
  std::vector<std::string> tokens_;
  std::vector<bool> has_token_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<uint32_t> unk_id_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::string prefix_, suffix_;  // continuing_subword_prefix, end_of_word_suffix

  // Words seen before: most text repeats a small set of words.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<uint32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace ember::llm
