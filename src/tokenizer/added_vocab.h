// tokenizer.json's "added_tokens": strings matched in the text before the model runs (leftmost,
// longest first), with upstream's lstrip / rstrip / single_word / normalized flags. Tokens with
// normalized=false are matched on the raw text, the others (kept by their normalized content, as
// upstream does) on the normalized text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/bpe.h"

namespace ember::llm {

class Normalizer;

struct AddedToken {
  uint32_t id = 0;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// A piece of the input: either an added token's id or text for the model.
struct Segment {
  std::optional<uint32_t> id;
  std::string text;  // normalized text when `id` is empty
};

class AddedVocabulary {
 public:
  static AddedVocabulary from_json(const nlohmann::json& list, const Normalizer& normalizer, const std::string& where);

  // Splits `text` on the added tokens, normalizing the text between them.
  std::vector<Segment> split(std::string_view text, const Normalizer& normalizer) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* by_id(uint32_t id) const;
  const AddedToken* by_content(std::string_view content) const;
  size_t id_limit() const { return by_id_.size(); }

 private:
  // A byte trie over the patterns of one matching pass; `token` is an index into tokens_.
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int>> children;
      int token = -1;
    };
    std::vector<Node> nodes{1};
    void insert(std::string_view pattern, int token);
    // Longest pattern starting at `pos`: its token index and length, or -1.
    int longest(std::string_view s, size_t pos, size_t& len) const;
  };
  void split_pass(const Trie& trie, std::string_view text, std::vector<Segment>& out) const;

  std::vector<AddedToken> tokens_;
  std::vector<int> by_id_;  // id -> index in tokens_, -1 when none
  TokenMap by_content_;     // content -> index in tokens_
  Trie raw_, normalized_;
  bool any_normalized_ = false;
};

}  // namespace ember::llm
