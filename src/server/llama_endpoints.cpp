#include "server/llama_endpoints.h"

#include "common/error.h"
#include "common/version.h"
#include "chat/chat_template.h"
#include "tokenizer/utf8.h"
#include "server/api_error.h"
#include "server/request_parse.h"

namespace ember::server {
namespace {

using json = nlohmann::json;

void refuse_unknown(const json& obj, std::initializer_list<const char*> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) throw ApiError::bad_request("unrecognized request argument supplied: '" + it.key() + "'", it.key(), "unknown_parameter");
  }
}

bool flag(const json& obj, const char* name, bool fallback) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw ApiError::bad_request("'" + std::string(name) + "' must be a boolean", name, "invalid_type");
  return it->get<bool>();
}

// llama-server's generation settings for a request that gives none of its own: what
// request_parse.h applies (OpenAI's defaults), in llama-server's names.
json params_json(const llm::SamplingOptions& s, uint32_t max_tokens, const std::vector<std::string>& stops, std::optional<uint64_t> seed) {
  return {{"n_predict", max_tokens}, {"max_tokens", max_tokens}, {"seed", seed ? json(*seed) : json(-1)},
          {"temperature", s.temperature}, {"top_k", s.top_k}, {"top_p", s.top_p}, {"min_p", s.min_p},
          {"repeat_last_n", s.repeat_last_n}, {"repeat_penalty", s.repeat_penalty}, {"presence_penalty", 0.0},
          {"frequency_penalty", 0.0}, {"stop", stops}, {"n_probs", 0}, {"stream", false}};
}

json default_params(const ServerFacts& f) {
  llm::SamplingOptions s;
  s.temperature = 1;  // request_parse.h: OpenAI's defaults, not the CLI's
  s.top_k = 0;
  s.top_p = 1;
  s.min_p = 0;
  s.repeat_penalty = 1;
  s.repeat_last_n = 64;
  const uint32_t n = f.max_tokens_cap ? std::min(f.default_max_tokens, f.max_tokens_cap) : f.default_max_tokens;
  return params_json(s, n, {}, std::nullopt);
}

}  // namespace

json tokenize_route(const std::string& body, const llm::Tokenizer& tokenizer, uint32_t max_json_depth) {
  json obj = parse_json_object(body, max_json_depth);
  refuse_unknown(obj, {"content", "add_special", "parse_special", "with_pieces"});
  auto c = obj.find("content");
  if (c == obj.end() || c->is_null()) throw ApiError::bad_request("'content' is required", "content", "missing_required_parameter");
  if (!c->is_string()) throw ApiError::bad_request("'content' must be a string", "content", "invalid_type");
  const bool add_special = flag(obj, "add_special", false), with_pieces = flag(obj, "with_pieces", false);
  if (!flag(obj, "parse_special", true))
    throw ApiError::bad_request("'parse_special' false is not supported: special-token text (e.g. <|im_start|>) always becomes its token",
                                "parse_special", "unsupported_parameter");
  std::vector<uint32_t> ids;
  try {
    ids = tokenizer.encode(c->get<std::string>(), add_special);
  } catch (const Error& e) {
    throw ApiError::bad_request(e.what(), "content");
  }
  json tokens = json::array();
  for (uint32_t id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    const std::string bytes = tokenizer.decode_bytes({id}, false);
    json piece;
    if (llm::utf8::first_invalid(bytes) == std::string::npos) piece = bytes;
    else {  // part of a UTF-8 character: its bytes, as llama-server gives them
      piece = json::array();
      for (unsigned char b : bytes) piece.push_back(b);
    }
    tokens.push_back({{"id", id}, {"piece", piece}});
  }
  return {{"tokens", tokens}};
}

json detokenize_route(const std::string& body, const llm::Tokenizer& tokenizer, uint32_t max_json_depth) {
  json obj = parse_json_object(body, max_json_depth);
  refuse_unknown(obj, {"tokens"});
  auto t = obj.find("tokens");
  if (t == obj.end() || t->is_null()) throw ApiError::bad_request("'tokens' is required", "tokens", "missing_required_parameter");
  if (!t->is_array()) throw ApiError::bad_request("'tokens' must be an array of token ids", "tokens", "invalid_type");
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < t->size(); i++) {
    const json& v = (*t)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || uint64_t(v.get<int64_t>()) >= tokenizer.vocab_size())
      throw ApiError::bad_request("tokens[" + std::to_string(i) + "] = " + v.dump() + " is not a token id of this model (0.." +
                                      std::to_string(tokenizer.vocab_size() - 1) + ")",
                                  "tokens");
    ids.push_back(static_cast<uint32_t>(v.get<int64_t>()));
  }
  return {{"content", tokenizer.decode(ids, false)}};
}

json slot_json(const SlotInfo& slot, const ServerFacts& facts, uint32_t n_ctx) {
  json j = {{"id", slot.id}, {"n_ctx", n_ctx}, {"speculative", false}, {"is_processing", slot.job != nullptr}};
  if (!slot.job) {
    j["id_task"] = -1;
    j["params"] = default_params(facts);
    j["next_token"] = {{"has_next_token", false}, {"has_new_line", false}, {"n_remain", -1}, {"n_decoded", 0}};
    return j;
  }
  const JobRequest& r = slot.job->request();
  const uint32_t decoded = slot.job->generated();
  j["params"] = params_json(r.sampling, r.max_tokens, r.stops, r.sampling.seed);
  j["n_prompt_tokens"] = r.prompt.size();
  j["next_token"] = {{"has_next_token", true}, {"has_new_line", false},
                     {"n_remain", r.max_tokens > decoded ? r.max_tokens - decoded : 0}, {"n_decoded", decoded}};
  return j;
}

json slots_route(const ServerFacts& facts, const Scheduler& scheduler) {
  json out = json::array();
  for (const auto& s : scheduler.slot_info()) out.push_back(slot_json(s, facts, facts.n_ctx));
  return out;
}

json props_route(const ServerFacts& facts, const Scheduler& scheduler) {
  SlotInfo idle;
  json settings = slot_json(idle, facts, facts.n_ctx);
  settings["prompt"] = "";
  // The template is LFM2's, built in (chat/chat_template.h): its name, and what it makes of a
  // short conversation, stand for the Jinja text llama-server shows.
  const std::string example = llm::render_lfm2_chat({{"system", "SYSTEM"}, {"user", "USER"}, {"assistant", "ASSISTANT"}, {"user", "USER"}}, true);
  return {{"default_generation_settings", settings},
          {"total_slots", scheduler.parallel()},
          {"model_path", facts.model_path},
          {"model_alias", facts.model_name},
          {"chat_template", "lfm2"},
          {"chat_template_caps", json::object()},
          {"modalities", {{"vision", false}, {"audio", false}}},
          {"build_info", std::string("ember ") + kEmberVersion},
          {"is_sleeping", false},
          {"ember",
           {{"version", kEmberVersion}, {"chat_template_example", example}, {"slot_capacity", scheduler.capacity()},
            {"queue", facts.queue}, {"default_max_tokens", facts.default_max_tokens}, {"max_tokens_cap", facts.max_tokens_cap},
            {"active", scheduler.active()}, {"queued", scheduler.queued()}}}};
}

}  // namespace ember::server
