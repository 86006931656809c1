#include "tokenizer/bpe.h"

#include <cstdio>
#include <queue>

#include "common/error.h"
#include "tokenizer/utf8.h"

namespace ember::llm {

namespace {

constexpr size_t kCacheCapacity = 100000;
constexpr size_t kCacheMaxWordBytes = 128;

std::string optional_string(const nlohmann::json& spec, const char* key) {
  auto it = spec.find(key);
  return it == spec.end() || it->is_null() ? std::string() : it->get<std::string>();
}

}  // namespace

BpeModel::BpeModel(BpeModel&& o) noexcept { *this = std::move(o); }

BpeModel& BpeModel::operator=(BpeModel&& o) noexcept {
  vocab_ = std::move(o.vocab_);
  tokens_ = std::move(o.tokens_);
  has_token_ = std::move(o.has_token_);
  merges_ = std::move(o.merges_);
  unk_id_ = o.unk_id_;
  fuse_unk_ = o.fuse_unk_;
  byte_fallback_ = o.byte_fallback_;
  ignore_merges_ = o.ignore_merges_;
  prefix_ = std::move(o.prefix_);
  suffix_ = std::move(o.suffix_);
  cache_.clear();
  return *this;
}

BpeModel BpeModel::from_json(const nlohmann::json& spec, const std::string& where) {
  BpeModel m;
  if (spec.contains("dropout") && !spec["dropout"].is_null() && spec["dropout"].get<double>() > 0)
    throw Error("BPE dropout is not supported", where + ".dropout", "set dropout to null for inference");
  const auto& vocab = spec.at("vocab");
  if (!vocab.is_object()) throw Error("vocab is not an object of token -> id", where + ".vocab");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_unsigned()) throw Error("vocab id of \"" + it.key() + "\" is not a non-negative integer", where + ".vocab");
    uint32_t id = it.value().get<uint32_t>();
    if (id >= m.tokens_.size()) {
      m.tokens_.resize(id + 1);
      m.has_token_.resize(id + 1, false);
    }
    m.tokens_[id] = it.key();
    m.has_token_[id] = true;
    m.vocab_.emplace(it.key(), id);
  }
  m.prefix_ = optional_string(spec, "continuing_subword_prefix");
  m.suffix_ = optional_string(spec, "end_of_word_suffix");
  m.fuse_unk_ = spec.value("fuse_unk", false);
  m.byte_fallback_ = spec.value("byte_fallback", false);
  m.ignore_merges_ = spec.value("ignore_merges", false);
  std::string unk = optional_string(spec, "unk_token");
  if (!unk.empty()) {
    auto id = m.id_of(unk);
    if (!id) throw Error("unk_token \"" + unk + "\" is not in the vocabulary", where + ".unk_token");
    m.unk_id_ = id;
  }

  const auto& merges = spec.at("merges");
  m.merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); rank++) {
    const auto& entry = merges[rank];
    std::string a, b;
    if (entry.is_string()) {
      const std::string& s = entry.get_ref<const std::string&>();
      size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        throw Error("merge \"" + s + "\" is not two tokens separated by one space", where + ".merges[" + std::to_string(rank) + "]");
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (entry.is_array() && entry.size() == 2) {
      a = entry[0].get<std::string>();
      b = entry[1].get<std::string>();
    } else {
      throw Error("merge is neither \"a b\" nor [a, b]", where + ".merges[" + std::to_string(rank) + "]");
    }
    auto ia = m.id_of(a), ib = m.id_of(b);
    // The merged token drops the right side's continuing-subword prefix.
    std::string merged = a + (!m.prefix_.empty() && b.starts_with(m.prefix_) ? b.substr(m.prefix_.size()) : b);
    auto im = m.id_of(merged);
    if (!ia || !ib || !im)
      throw Error("merge \"" + a + " " + b + "\" uses a token that is not in the vocabulary",
                  where + ".merges[" + std::to_string(rank) + "]", "the file's vocab and merges do not belong together");
    m.merges_.emplace(pair_key(*ia, *ib), Merge{static_cast<uint32_t>(rank), *im});  // first rank wins
  }
  return m;
}

std::optional<uint32_t> BpeModel::id_of(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::token_of(uint32_t id) const {
  return id < tokens_.size() && has_token_[id] ? &tokens_[id] : nullptr;
}

void BpeModel::tokenize(std::string_view word, std::vector<uint32_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto id = id_of(word)) {
      ids.push_back(*id);
      return;
    }
  }
  bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t first = ids.size();
  merge_word(word, ids);
  if (cacheable) {
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();
    cache_.emplace(std::string(word), std::vector<uint32_t>(ids.begin() + first, ids.end()));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<uint32_t>& ids) const {
  struct Symbol {
    uint32_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> sym;
  sym.reserve(word.size());
  auto add = [&](uint32_t id) {
    int n = static_cast<int>(sym.size());
    if (n > 0) sym.back().next = n;
    sym.push_back({id, n - 1, -1, true});
  };

  // Characters to initial symbols; unknown ones become bytes or unk (fused when asked).
  bool pending_unk = false;  // an unknown character waits (unk ids are added late, as upstream)
  std::string piece;
  size_t pos = 0;
  while (pos < word.size()) {
    size_t start = pos;
    int len = utf8::sequence_length(static_cast<unsigned char>(word[pos]));
    pos = std::min(word.size(), pos + (len > 0 ? len : 1));
    piece.clear();
    if (start > 0) piece += prefix_;
    piece.append(word.substr(start, pos - start));
    if (pos == word.size()) piece += suffix_;
    if (auto id = id_of(piece)) {
      if (pending_unk) add(*unk_id_), pending_unk = false;
      add(*id);
      continue;
    }
    if (byte_fallback_) {
      std::vector<uint32_t> bytes;
      char name[8];
      for (unsigned char c : piece) {
        std::snprintf(name, sizeof name, "<0x%02X>", c);
        auto id = id_of(name);
        if (!id) break;
        bytes.push_back(*id);
      }
      if (bytes.size() == piece.size()) {
        for (uint32_t id : bytes) add(id);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk && !fuse_unk_) add(*unk_id_);
      pending_unk = true;
    }
  }
  if (pending_unk) add(*unk_id_);

  struct Candidate {
    uint32_t rank;
    int pos;
    uint32_t id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int left) {
    int right = sym[left].next;
    if (right < 0) return;
    auto it = merges_.find(pair_key(sym[left].id, sym[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.id});
  };
  for (int i = 0; i + 1 < static_cast<int>(sym.size()); i++) consider(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = sym[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = sym[left.next];
    auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.id != top.id) continue;  // stale: a neighbour changed
    left.id = top.id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) sym[left.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (int i = sym.empty() ? -1 : 0; i >= 0; i = sym[i].next) ids.push_back(sym[i].id);
}

}  // namespace ember::llm
