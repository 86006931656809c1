// Token-level matching of a Grammar (gbnf.h): which vocabulary tokens may come next, given the
// bytes generated so far.
//
// State: a set of stacks, each a path through the rules (the top is the next character element
// to match; an empty stack means the grammar is complete), plus the bytes of an unfinished UTF-8
// character (a token may end inside one; the next must finish it). A token is allowed when some
// stack accepts all its bytes; the vocabulary's tokens sit in a byte trie, so one walk of the
// trie, advancing the stack set a byte per edge and pruning where it dies, finds them all.
// The allowed set depends only on the state, and constrained output revisits few states (inside a
// JSON string every character leads back to the same one), so states are interned, their byte
// transitions memoized (a trie walk through a loop of the grammar costs a lookup per node) and
// their masks cached, shared between the requests that use the same grammar (MaskCache).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llm/grammar/gbnf.h"

namespace ember::llm::grammar {

// The vocabulary's tokens as bytes, in a trie. An empty string marks a token grammar output never
// contains (special tokens: the end of generation is allowed by the matcher separately).
class TokenTrie {
 public:
  explicit TokenTrie(const std::vector<std::string>& token_bytes);
  uint32_t vocab() const { return vocab_; }
  uint32_t mask_words() const { return (vocab_ + 31) / 32; }
  const std::string& bytes(uint32_t token) const { return bytes_[token]; }

  struct Node {
    uint32_t child_begin = 0, child_end = 0;  // children: nodes_[child_begin, child_end), by byte
    uint32_t token_begin = 0, token_end = 0;  // tokens spelled by the path to this node
    uint8_t byte = 0;                         // the edge into this node
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<uint32_t>& tokens() const { return tokens_; }

 private:
  uint32_t vocab_ = 0;
  std::vector<std::string> bytes_;
  std::vector<Node> nodes_;  // nodes_[0] is the root (the empty string)
  std::vector<uint32_t> tokens_;
};

using Stack = std::vector<const Element*>;

struct MatchState {
  std::vector<Stack> stacks;  // sorted, unique
  uint32_t partial = 0;       // an unfinished UTF-8 character: its bits so far
  uint32_t pending = 0;       // and how many continuation bytes it still needs
  uint32_t floor = 0;         // and the smallest code point its length encodes
  bool operator==(const MatchState&) const = default;
};

// What matchers of one grammar and one vocabulary share: the states met so far (interned), the
// transitions between them by byte, and the masks of the states a matcher asked about. Bounded:
// cleared when full (a matcher keeps its own state, so it just interns it again).
class MaskCache {
 public:
  static constexpr uint32_t kDead = UINT32_MAX;  // no stack survives
  explicit MaskCache(size_t max_states = 16384, size_t max_masks = 2048) : max_states_(max_states), max_masks_(max_masks) {}
  uint32_t intern(const MatchState& s);
  // The state after `byte` (kDead where the grammar refuses it); computed once per (state, byte).
  uint32_t step(const Grammar& g, uint32_t state, uint8_t byte);
  const std::vector<uint32_t>* mask(uint32_t state) const;
  void set_mask(uint32_t state, std::vector<uint32_t> mask);
  // Empties the cache where it grew past its bounds (never while a caller holds state ids).
  void trim();
  size_t states() const { return states_.size(); }
  size_t masks() const { return mask_count_; }

 private:
  std::vector<MatchState> states_;
  std::vector<std::vector<uint32_t>> masks_;  // by state; empty = not computed
  std::unordered_map<uint64_t, std::vector<uint32_t>> index_;  // state hash -> ids
  std::unordered_map<uint64_t, uint32_t> next_;                // state << 8 | byte -> state
  size_t mask_count_ = 0, max_states_, max_masks_;
};

class Matcher {
 public:
  // `cache` may be shared by matchers of the same grammar and trie (one thread at a time).
  Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie, std::shared_ptr<MaskCache> cache = nullptr);

  // The tokens that may come next: bit t % 32 of words[t / 32] (trie->mask_words() words), the
  // grammar's own tokens only (the caller adds its end-of-generation ids where can_end()).
  const std::vector<uint32_t>& allowed();
  // Advances over a token (or raw bytes); false, with the state unchanged, where the grammar
  // does not allow them.
  bool accept(uint32_t token);
  bool accept_bytes(std::string_view bytes);
  bool can_end() const;  // the output so far is a complete sentence of the grammar
  bool done() const;     // and nothing may follow it

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  std::shared_ptr<MaskCache> cache_;
  MatchState state_;
  std::vector<uint32_t> mask_;
};

}  // namespace ember::llm::grammar
