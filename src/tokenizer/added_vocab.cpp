#include "tokenizer/added_vocab.h"

#include <algorithm>
#include <utf8proc.h>

#include "common/error.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace ember::llm {

namespace {

// Rust's char::is_whitespace: the White_Space property.
bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// A word character for single_word tokens: alphanumeric (letter and number categories) or '_'.
bool is_word_char(char32_t c) {
  if (c == '_') return true;
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) || (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

char32_t last_char(std::string_view s, size_t end, size_t& start) {
  start = end;
  do start--;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80);
  size_t p = start;
  return utf8::next(s, p);
}

}  // namespace

void AddedVocabulary::Trie::insert(std::string_view pattern, int token) {
  int node = 0;
  for (unsigned char c : pattern) {
    auto& kids = nodes[node].children;
    auto it = std::find_if(kids.begin(), kids.end(), [c](const auto& k) { return k.first == c; });
    if (it != kids.end()) {
      node = it->second;
      continue;
    }
    int child = static_cast<int>(nodes.size());
    nodes[node].children.push_back({c, child});  // push before growing: `kids` may move
    nodes.emplace_back();
    node = child;
  }
  if (nodes[node].token < 0) nodes[node].token = token;
}

int AddedVocabulary::Trie::longest(std::string_view s, size_t pos, size_t& len) const {
  int node = 0, best = -1;
  for (size_t i = pos; i < s.size(); i++) {
    const auto& kids = nodes[node].children;
    unsigned char c = static_cast<unsigned char>(s[i]);
    auto it = std::find_if(kids.begin(), kids.end(), [c](const auto& k) { return k.first == c; });
    if (it == kids.end()) break;
    node = it->second;
    if (nodes[node].token >= 0) {
      best = nodes[node].token;
      len = i + 1 - pos;
    }
  }
  return best;
}

AddedVocabulary AddedVocabulary::from_json(const nlohmann::json& list, const Normalizer& normalizer, const std::string& where) {
  AddedVocabulary v;
  if (list.is_null()) return v;
  if (!list.is_array()) throw Error("added_tokens is not an array", where);
  for (size_t i = 0; i < list.size(); i++) {
    const auto& e = list[i];
    std::string at = where + "[" + std::to_string(i) + "]";
    AddedToken t;
    if (!e.contains("id") || !e["id"].is_number_unsigned() || !e.contains("content") || !e["content"].is_string())
      throw Error("added token needs a non-negative \"id\" and a string \"content\"", at);
    t.id = e["id"].get<uint32_t>();
    t.content = e["content"].get<std::string>();
    if (t.content.empty()) throw Error("added token has empty content", at);
    t.special = e.value("special", false);
    t.lstrip = e.value("lstrip", false);
    t.rstrip = e.value("rstrip", false);
    t.single_word = e.value("single_word", false);
    t.normalized = e.value("normalized", !t.special);
    // Upstream keeps a normalized token by its normalized text: that is what it matches, what
    // token_to_id knows and what decoding writes.
    if (t.normalized) t.content = normalizer.apply(t.content);
    if (t.content.empty()) throw Error("added token is empty after normalization", at);
    int index = static_cast<int>(v.tokens_.size());
    if (t.id >= v.by_id_.size()) v.by_id_.resize(t.id + 1, -1);
    v.by_id_[t.id] = index;
    v.by_content_.emplace(t.content, index);
    if (t.normalized) {
      v.normalized_.insert(t.content, index);
      v.any_normalized_ = true;
    } else {
      v.raw_.insert(t.content, index);
    }
    v.tokens_.push_back(std::move(t));
  }
  return v;
}

const AddedToken* AddedVocabulary::by_id(uint32_t id) const {
  return id < by_id_.size() && by_id_[id] >= 0 ? &tokens_[by_id_[id]] : nullptr;
}

const AddedToken* AddedVocabulary::by_content(std::string_view content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

void AddedVocabulary::split_pass(const Trie& trie, std::string_view s, std::vector<Segment>& out) const {
  size_t taken = 0;  // end of what previous matches consumed
  size_t pos = 0;
  while (pos < s.size()) {
    size_t len = 0;
    int index = trie.nodes[0].children.empty() ? -1 : trie.longest(s, pos, len);
    if (index < 0) {
      pos++;
      continue;
    }
    const AddedToken& t = tokens_[index];
    size_t start = pos, stop = pos + len;
    pos = stop;  // matching resumes after this match whether it is kept or not
    if (t.single_word) {
      size_t before;
      bool word_before = start > 0 && is_word_char(last_char(s, start, before));
      size_t after = stop;
      bool word_after = stop < s.size() && is_word_char(utf8::next(s, after));
      if (word_before || word_after) continue;
    }
    if (t.lstrip) {
      size_t new_start = start;
      while (new_start > 0) {
        size_t prev;
        if (!is_whitespace(last_char(s, new_start, prev))) break;
        new_start = prev;
      }
      start = std::max(new_start, taken);
    }
    if (t.rstrip) {
      while (stop < s.size()) {
        size_t next = stop;
        if (!is_whitespace(utf8::next(s, next))) break;
        stop = next;
      }
      pos = stop;
    }
    if (taken < start) out.push_back({std::nullopt, std::string(s.substr(taken, start - taken))});
    out.push_back({t.id, {}});
    taken = stop;
  }
  if (taken < s.size()) out.push_back({std::nullopt, std::string(s.substr(taken))});
}

std::vector<Segment> AddedVocabulary::split(std::string_view text, const Normalizer& normalizer) const {
  std::vector<Segment> first, result;
  split_pass(raw_, text, first);
  for (auto& seg : first) {
    if (seg.id) {
      result.push_back(std::move(seg));
      continue;
    }
    std::string normalized = normalizer.empty() ? std::move(seg.text) : normalizer.apply(seg.text);
    if (any_normalized_) split_pass(normalized_, normalized, result);
    else if (!normalized.empty()) result.push_back({std::nullopt, std::move(normalized)});
  }
  return result;
}

}  // namespace ember::llm
