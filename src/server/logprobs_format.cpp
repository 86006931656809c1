#include "server/logprobs_format.h"

namespace ember::server {
namespace {

using json = nlohmann::json;

// A token's text may be part of a UTF-8 character: `token` is what a string can hold (the JSON
// writer replaces invalid bytes), `bytes` the exact bytes.
json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(c);
  return b;
}

}  // namespace

json LogprobsWriter::format(const std::vector<kernels::TopLogprobs>& entries) {
  auto text = [&](uint32_t id) { return tokenizer_.decode_bytes({id}, /*skip_special_tokens=*/false); };
  if (chat_) {
    json content = json::array();
    for (const auto& e : entries) {
      const std::string t = text(e.id);
      json top = json::array();
      for (const auto& [id, lp] : e.top) {
        const std::string s = text(id);
        top.push_back({{"token", s}, {"logprob", lp}, {"bytes", bytes_of(s)}});
      }
      content.push_back({{"token", t}, {"logprob", e.logprob}, {"bytes", bytes_of(t)}, {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const auto& e : entries) {
    const std::string t = text(e.id);
    tokens.push_back(t);
    lps.push_back(e.logprob);
    json top = json::object();
    for (const auto& [id, lp] : e.top) top[text(id)] = lp;
    tops.push_back(top);
    offsets.push_back(offset_);
    offset_ += t.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

}  // namespace ember::server
