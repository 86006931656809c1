#include "llm/grammar/matcher.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"

namespace ember::llm::grammar {
namespace {

// A grammar whose stack sets grow past this is ambiguous beyond use (e.g. (a|a|a)* nested).
constexpr size_t kMaxStacks = 4096;

// Pushes `s` with its top expanded until every resulting stack's top is a character element
// (or the stack is empty: complete). Left recursion is refused by the parser, so this ends.
void expand(const Grammar& g, Stack s, std::vector<Stack>& out) {
  if (s.empty() || s.back()->kind == Element::Char) {
    out.push_back(std::move(s));
    return;
  }
  const Element* ref = s.back();
  s.pop_back();
  if ((ref + 1)->kind != Element::End) s.push_back(ref + 1);
  for (const Alternative& alt : g.rules[ref->rule].alternatives) {
    Stack n = s;
    if (alt.front().kind != Element::End) n.push_back(&alt.front());
    expand(g, std::move(n), out);
  }
}

void normalize(std::vector<Stack>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.size() > kMaxStacks)
    throw Error("the grammar is too ambiguous to match (" + std::to_string(stacks.size()) + " parses at once)", "grammar",
                "make its alternatives start differently");
}

// Could a character element match some code point whose UTF-8 starts with the bits `partial`,
// `pending` continuation bytes still to come?
bool may_match(const Element& e, uint32_t partial, uint32_t pending, uint32_t floor) {
  const uint32_t lo = std::max(floor, partial << (6 * pending)), hi = std::min(0x10ffffu, (partial << (6 * pending)) | ((1u << (6 * pending)) - 1));
  for (const auto& [a, b] : e.ranges) {
    if (!e.negated && a <= hi && b >= lo) return true;
    if (e.negated && a <= lo && b >= hi) return false;  // the whole span excluded
  }
  return e.negated;
}

// The state after one more byte; empty stacks where the byte is not allowed.
MatchState advance(const Grammar& g, const MatchState& s, uint8_t byte) {
  MatchState out;
  uint32_t cp = 0;
  if (s.pending == 0) {
    // Only well-formed UTF-8 (RFC 3629): no overlong forms, surrogates or code points past
    // U+10FFFF, so that grammar output always decodes.
    if (byte < 0x80) cp = byte;
    else if (byte >= 0xc2 && byte <= 0xdf) out.partial = byte & 0x1f, out.pending = 1, out.floor = 0x80;
    else if ((byte & 0xf0) == 0xe0) out.partial = byte & 0x0f, out.pending = 2, out.floor = 0x800;
    else if (byte >= 0xf0 && byte <= 0xf4) out.partial = byte & 0x07, out.pending = 3, out.floor = 0x10000;
    else return out;  // a continuation byte with no lead, or no UTF-8 lead byte at all
  } else {
    if ((byte & 0xc0) != 0x80) return out;
    // The second byte of a 3- or 4-byte form (partial holds only the lead's bits then).
    if (s.pending == 2 && s.partial == 0x0 && byte < 0xa0) return out;   // overlong
    if (s.pending == 2 && s.partial == 0xd && byte >= 0xa0) return out;  // a surrogate
    if (s.pending == 3 && s.partial == 0x0 && byte < 0x90) return out;   // overlong
    if (s.pending == 3 && s.partial == 0x4 && byte >= 0x90) return out;  // past U+10FFFF
    out.partial = (s.partial << 6) | (byte & 0x3f);
    out.pending = s.pending - 1;
    out.floor = s.floor;
    cp = out.partial;
  }
  if (out.pending > 0) {
    for (const Stack& st : s.stacks)
      if (!st.empty() && may_match(*st.back(), out.partial, out.pending, out.floor)) out.stacks.push_back(st);
    return out;  // still sorted and unique
  }
  out.partial = out.floor = 0;
  for (const Stack& st : s.stacks) {
    if (st.empty() || !st.back()->matches(cp)) continue;
    Stack n = st;
    const Element* e = n.back();
    n.pop_back();
    if ((e + 1)->kind != Element::End) n.push_back(e + 1);
    expand(g, std::move(n), out.stacks);
  }
  normalize(out.stacks);
  return out;
}

uint64_t hash_state(const MatchState& s) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(s.partial);
  mix(s.pending);
  mix(s.floor);
  for (const Stack& st : s.stacks) {
    mix(st.size());
    for (const Element* e : st) mix(reinterpret_cast<uintptr_t>(e));
  }
  return h;
}

}  // namespace

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes) : vocab_(static_cast<uint32_t>(token_bytes.size())), bytes_(token_bytes) {
  std::vector<uint32_t> order;
  for (uint32_t t = 0; t < vocab_; t++)
    if (!bytes_[t].empty()) order.push_back(t);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return bytes_[a] < bytes_[b]; });
  tokens_.reserve(order.size());
  nodes_.push_back({});
  // Breadth-first over ranges of `order` sharing a prefix, so each node's children are adjacent.
  struct Pending {
    uint32_t node, begin, end, depth;
  };
  std::vector<Pending> queue{{0, 0, static_cast<uint32_t>(order.size()), 0}};
  for (size_t q = 0; q < queue.size(); q++) {
    const Pending p = queue[q];
    uint32_t i = p.begin;
    nodes_[p.node].token_begin = static_cast<uint32_t>(tokens_.size());
    while (i < p.end && bytes_[order[i]].size() == p.depth) tokens_.push_back(order[i++]);  // sorted first
    nodes_[p.node].token_end = static_cast<uint32_t>(tokens_.size());
    nodes_[p.node].child_begin = static_cast<uint32_t>(nodes_.size());
    while (i < p.end) {
      const auto byte = static_cast<uint8_t>(bytes_[order[i]][p.depth]);
      uint32_t j = i;
      while (j < p.end && static_cast<uint8_t>(bytes_[order[j]][p.depth]) == byte) j++;
      const auto child = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back({.byte = byte});
      queue.push_back({child, i, j, p.depth + 1});
      i = j;
    }
    nodes_[p.node].child_end = static_cast<uint32_t>(nodes_.size());
  }
}

uint32_t MaskCache::intern(const MatchState& s) {
  auto& ids = index_[hash_state(s)];
  for (uint32_t id : ids)
    if (states_[id] == s) return id;
  const auto id = static_cast<uint32_t>(states_.size());
  states_.push_back(s);
  masks_.emplace_back();
  ids.push_back(id);
  return id;
}

uint32_t MaskCache::step(const Grammar& g, uint32_t state, uint8_t byte) {
  const uint64_t key = (uint64_t(state) << 8) | byte;
  if (auto it = next_.find(key); it != next_.end()) return it->second;
  MatchState n = advance(g, states_[state], byte);
  const uint32_t id = n.stacks.empty() ? kDead : intern(n);
  next_.emplace(key, id);
  return id;
}

const std::vector<uint32_t>* MaskCache::mask(uint32_t state) const { return masks_[state].empty() ? nullptr : &masks_[state]; }

void MaskCache::set_mask(uint32_t state, std::vector<uint32_t> mask) {
  if (masks_[state].empty()) mask_count_++;
  masks_[state] = std::move(mask);
}

void MaskCache::trim() {
  if (states_.size() <= max_states_ && mask_count_ <= max_masks_ && next_.size() <= 64 * max_states_) return;
  states_.clear();
  masks_.clear();
  index_.clear();
  next_.clear();
  mask_count_ = 0;
}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie, std::shared_ptr<MaskCache> cache)
    : grammar_(std::move(grammar)), trie_(std::move(trie)), cache_(cache ? std::move(cache) : std::make_shared<MaskCache>()) {
  const Rule& root = grammar_->rules[grammar_->root];
  for (const Alternative& alt : root.alternatives) {
    Stack s;
    if (alt.front().kind != Element::End) s.push_back(&alt.front());
    expand(*grammar_, std::move(s), state_.stacks);
  }
  normalize(state_.stacks);
}

const std::vector<uint32_t>& Matcher::allowed() {
  cache_->trim();
  const uint32_t start = cache_->intern(state_);
  if (const auto* m = cache_->mask(start)) {
    mask_ = *m;
    return mask_;
  }
  mask_.assign(trie_->mask_words(), 0);
  const auto& nodes = trie_->nodes();
  const auto& tokens = trie_->tokens();
  // Depth-first over the trie; a branch ends where no stack survives its bytes. States and their
  // transitions are interned, so inside a loop of the grammar (a JSON string) a node costs one
  // lookup.
  std::vector<std::pair<uint32_t, uint32_t>> todo;  // (node, state before its byte)
  const auto& root = nodes[0];
  for (uint32_t c = root.child_end; c-- > root.child_begin;) todo.emplace_back(c, start);
  while (!todo.empty()) {
    const auto [n, from] = todo.back();
    todo.pop_back();
    const auto& node = nodes[n];
    const uint32_t next = cache_->step(*grammar_, from, node.byte);
    if (next == MaskCache::kDead) continue;
    for (uint32_t t = node.token_begin; t < node.token_end; t++) mask_[tokens[t] / 32] |= 1u << (tokens[t] % 32);
    for (uint32_t c = node.child_end; c-- > node.child_begin;) todo.emplace_back(c, next);
  }
  cache_->set_mask(start, mask_);
  return mask_;
}

bool Matcher::accept_bytes(std::string_view bytes) {
  MatchState s = state_;
  for (char c : bytes) {
    s = advance(*grammar_, s, static_cast<uint8_t>(c));
    if (s.stacks.empty()) return false;
  }
  state_ = std::move(s);
  return true;
}

bool Matcher::accept(uint32_t token) {
  if (token >= trie_->vocab() || trie_->bytes(token).empty()) return false;
  return accept_bytes(trie_->bytes(token));
}

bool Matcher::can_end() const {
  return state_.pending == 0 && std::any_of(state_.stacks.begin(), state_.stacks.end(), [](const Stack& s) { return s.empty(); });
}

bool Matcher::done() const { return state_.pending == 0 && state_.stacks.size() == 1 && state_.stacks[0].empty(); }

}  // namespace ember::llm::grammar
