#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tokenizer/added_vocab.h"
#include "tokenizer/bpe.h"
#include "llm/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"

namespace ember::llm {

struct Tokenizer::Impl {
  std::string origin;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  BpeModel model;
  AddedVocabulary added;
  Decoder decoder;
  // What the post-processor puts around one sequence when special tokens are asked for.
  std::vector<uint32_t> prefix, suffix;
  std::optional<uint32_t> padding_id;  // "padding": {"pad_id": ...}

  void load_post_processor(const nlohmann::json& spec, const std::string& where);
  const std::string& token_text(uint32_t id) const;
  std::string decode(const std::vector<uint32_t>& ids, bool skip_special, bool raw_byte_runs) const;
};

namespace {

uint32_t special_id(const nlohmann::json& entry, const std::string& where) {
  // Roberta/Bert give [token, id].
  if (!entry.is_array() || entry.size() != 2 || !entry[1].is_number_unsigned()) throw Error("expected [token, id]", where);
  return entry[1].get<uint32_t>();
}

}  // namespace

void Tokenizer::Impl::load_post_processor(const nlohmann::json& spec, const std::string& where) {
  if (spec.is_null()) return;
  std::string type = spec.value("type", "");
  if (type == "ByteLevel") return;  // only changes offsets, which ember does not report
  if (type == "Sequence") {
    const auto& list = spec.at("processors");
    for (size_t i = 0; i < list.size(); i++) load_post_processor(list[i], where + ".processors[" + std::to_string(i) + "]");
    return;
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    prefix.push_back(special_id(spec.at("cls"), where + ".cls"));
    suffix.insert(suffix.begin(), special_id(spec.at("sep"), where + ".sep"));
    return;
  }
  if (type != "TemplateProcessing")
    throw Error("unsupported post_processor type \"" + type + "\"", where,
                "ember supports TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel and Sequence of them");
  const auto& single = spec.at("single");
  const auto& specials = spec.value("special_tokens", nlohmann::json::object());
  bool after_sequence = false;
  for (size_t i = 0; i < single.size(); i++) {
    const auto& item = single[i];
    std::string at = where + ".single[" + std::to_string(i) + "]";
    if (item.contains("Sequence")) {
      if (item["Sequence"].value("id", "A") != "A") throw Error("a single-sequence template refers to sequence B", at);
      after_sequence = true;
      continue;
    }
    if (!item.contains("SpecialToken")) throw Error("template item is neither Sequence nor SpecialToken", at);
    std::string name = item["SpecialToken"].at("id").get<std::string>();
    if (!specials.contains(name)) throw Error("template special token \"" + name + "\" is not in special_tokens", at);
    std::vector<uint32_t> ids = specials[name].at("ids").get<std::vector<uint32_t>>();
    auto& target = after_sequence ? suffix : prefix;
    target.insert(target.end(), ids.begin(), ids.end());
  }
}

const std::string& Tokenizer::Impl::token_text(uint32_t id) const {
  if (const AddedToken* t = added.by_id(id)) return t->content;
  if (const std::string* s = model.token_of(id)) return *s;
  throw Error("token id " + std::to_string(id) + " is not in the vocabulary (ids go up to " +
                  std::to_string(std::max(model.id_limit(), added.id_limit())) + ")",
              origin, "decode only ids this tokenizer produced");
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open tokenizer file", path, "pass the path of a Hugging Face tokenizer.json");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return from_json_text(buffer.str(), path);
}

Tokenizer Tokenizer::from_json_text(std::string_view text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("not valid JSON: ") + e.what(), origin, "pass a Hugging Face tokenizer.json");
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    throw Error("no \"model\" object", origin, "pass a Hugging Face tokenizer.json");
  const auto& model = j["model"];
  std::string type = model.value("type", model.contains("merges") ? "BPE" : "");
  if (type != "BPE")
    throw Error("unsupported tokenizer model type \"" + type + "\"", origin + ": model.type",
                "ember implements the BPE model only (not WordPiece, WordLevel or Unigram)");
  auto impl = std::make_unique<Impl>();
  impl->origin = origin;
  try {
    auto field = [&](const char* key) { return j.contains(key) ? j[key] : nlohmann::json(); };
    impl->normalizer = Normalizer::from_json(field("normalizer"), origin + ": normalizer");
    impl->pre_tokenizer = PreTokenizer::from_json(field("pre_tokenizer"), origin + ": pre_tokenizer");
    impl->model = BpeModel::from_json(model, origin + ": model");
    impl->added = AddedVocabulary::from_json(field("added_tokens"), impl->normalizer, origin + ": added_tokens");
    impl->decoder = Decoder::from_json(field("decoder"), origin + ": decoder");
    impl->load_post_processor(field("post_processor"), origin + ": post_processor");
    if (j.contains("padding") && j["padding"].is_object() && j["padding"].contains("pad_id"))
      impl->padding_id = j["padding"]["pad_id"].get<uint32_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("malformed field: ") + e.what(), origin, "pass a Hugging Face tokenizer.json");
  }
  return Tokenizer(std::move(impl));
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  size_t bad = utf8::first_invalid(text);
  if (bad != std::string_view::npos)
    throw Error("text is not valid UTF-8 at byte " + std::to_string(bad), "tokenizer input", "pass UTF-8 text");
  std::vector<uint32_t> ids;
  if (add_special_tokens) ids = impl_->prefix;
  std::vector<std::string> words;
  bool at_start = true;
  for (const auto& seg : impl_->added.split(text, impl_->normalizer)) {
    if (seg.id) {
      ids.push_back(*seg.id);
      at_start = false;
      continue;
    }
    words.clear();
    impl_->pre_tokenizer.run(seg.text, words, at_start);
    at_start = false;
    for (const auto& w : words) impl_->model.tokenize(w, ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), impl_->suffix.begin(), impl_->suffix.end());
  return ids;
}

std::optional<Tokenizer::Offsets> Tokenizer::offsets(std::string_view text, const std::vector<uint32_t>& ids) const {
  // A normalizer that leaves this text as it is (NFC on NFC text) keeps the tokens aligned.
  if (!impl_->decoder.byte_level_only() || (!impl_->normalizer.empty() && impl_->normalizer.apply(text) != text)) return std::nullopt;
  Offsets out(ids.size(), {0, 0});
  // The post-processor's tokens sit at the ends and cover no text.
  size_t first = 0, last = ids.size();
  if (!impl_->prefix.empty() && impl_->prefix.size() <= ids.size() &&
      std::equal(impl_->prefix.begin(), impl_->prefix.end(), ids.begin()))
    first = impl_->prefix.size();
  if (!impl_->suffix.empty() && last >= first + impl_->suffix.size() &&
      std::equal(impl_->suffix.begin(), impl_->suffix.end(), ids.end() - long(impl_->suffix.size())))
    last -= impl_->suffix.size();
  auto is_continuation = [&](size_t p) { return p < text.size() && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80; };
  size_t cursor = 0;
  for (size_t i = first; i < last; i++) {
    const AddedToken* added = impl_->added.by_id(ids[i]);
    std::string bytes = added ? added->content : impl_->decode({ids[i]}, false, true);
    size_t begin, end;
    if (text.compare(cursor, bytes.size(), bytes) == 0) {
      begin = cursor;
      end = cursor + bytes.size();
    } else if (!added && !bytes.empty() && bytes[0] == ' ' && text.compare(cursor, bytes.size() - 1, std::string_view(bytes).substr(1)) == 0) {
      // ByteLevel's prefix space: it stands for the first character (alone, it covers that one).
      begin = cursor;
      end = cursor + bytes.size() - 1;
      if (end == begin && begin < text.size()) {
        out[i] = {begin, begin + 1};
        while (is_continuation(out[i].second)) out[i].second++;
        continue;
      }
    } else {
      size_t hit = text.find(bytes, cursor);  // whitespace an added token stripped lies between
      if (hit == std::string_view::npos) return std::nullopt;
      begin = hit;
      end = hit + bytes.size();
    }
    if (added) {  // the whitespace an lstrip / rstrip token swallowed is part of its range
      auto space = [&](size_t p) { return p < text.size() && std::strchr(" \t\n\r\v\f", text[p]) && text[p] != '\0'; };
      if (added->lstrip)
        while (begin > cursor && space(begin - 1)) begin--;
      if (added->rstrip)
        while (space(end)) end++;
    }
    cursor = end;
    while (begin > 0 && is_continuation(begin)) begin--;
    while (is_continuation(end)) end++;
    out[i] = {begin, end};
  }
  return out;
}

std::vector<uint32_t> Tokenizer::encode_padded(std::string_view text, size_t length, std::optional<uint32_t> pad_id,
                                               bool* truncated) const {
  if (!pad_id) pad_id = impl_->padding_id;
  if (!pad_id && !impl_->suffix.empty()) pad_id = impl_->suffix.back();
  if (!pad_id)
    throw Error("no padding token known", impl_->origin, "pass pad_id: the file has no \"padding\" and its post-processor appends no token");
  size_t specials = impl_->prefix.size() + impl_->suffix.size();
  if (length < specials)
    throw Error("length " + std::to_string(length) + " leaves no room for the " + std::to_string(specials) + " special tokens", impl_->origin);
  std::vector<uint32_t> body = encode(text, false);
  if (truncated) *truncated = body.size() > length - specials;
  if (body.size() > length - specials) body.resize(length - specials);
  std::vector<uint32_t> ids = impl_->prefix;
  ids.insert(ids.end(), body.begin(), body.end());
  ids.insert(ids.end(), impl_->suffix.begin(), impl_->suffix.end());
  ids.resize(length, *pad_id);
  return ids;
}

std::string Tokenizer::Impl::decode(const std::vector<uint32_t>& ids, bool skip_special, bool raw_byte_runs) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (uint32_t id : ids) {
    const std::string& t = token_text(id);
    const AddedToken* a = added.by_id(id);
    if (skip_special && a && a->special) continue;
    tokens.push_back(t);
  }
  return decoder.decode(std::move(tokens), raw_byte_runs);
}

std::string Tokenizer::decode_bytes(const std::vector<uint32_t>& ids, bool skip_special_tokens) const {
  return impl_->decode(ids, skip_special_tokens, true);
}

std::string Tokenizer::decode(const std::vector<uint32_t>& ids, bool skip_special_tokens) const {
  return utf8::lossy(impl_->decode(ids, skip_special_tokens, false));
}

std::optional<uint32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* t = impl_->added.by_content(token)) return t->id;
  return impl_->model.id_of(token);
}

std::optional<std::string> Tokenizer::id_to_token(uint32_t id) const {
  if (const AddedToken* t = impl_->added.by_id(id)) return t->content;
  if (const std::string* s = impl_->model.token_of(id)) return *s;
  return std::nullopt;
}

bool Tokenizer::is_special(uint32_t id) const {
  const AddedToken* t = impl_->added.by_id(id);
  return t && t->special;
}

size_t Tokenizer::vocab_size() const { return std::max(impl_->model.id_limit(), impl_->added.id_limit()); }

const std::vector<uint32_t>& Tokenizer::special_prefix() const { return impl_->prefix; }

}  // namespace ember::llm
