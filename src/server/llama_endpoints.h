// llama-server's own routes, in its request and response shapes, for the clients and scripts
// written against it:
//   POST /tokenize    {content, add_special?, parse_special?, with_pieces?} -> {tokens: [id...]}
//                     or, with_pieces, {tokens: [{id, piece}]} (piece: a string, or its bytes
//                     when the token holds part of a UTF-8 character)
//   POST /detokenize  {tokens: [id...]} -> {content}
//   GET  /props       default_generation_settings, total_slots, model_path, chat_template,
//                     build_info, ... and an "ember" object with what ember adds
//   GET  /slots       one object per sequence slot (id, n_ctx, is_processing, params, next_token)
// Bad bodies are ApiErrors (400) naming the field.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "server/scheduler.h"

namespace ember::server {

nlohmann::json tokenize_route(const std::string& body, const llm::Tokenizer& tokenizer, uint32_t max_json_depth);
nlohmann::json detokenize_route(const std::string& body, const llm::Tokenizer& tokenizer, uint32_t max_json_depth);

struct ServerFacts {
  std::string model_name, model_path;
  uint32_t default_max_tokens = 256, max_tokens_cap = 0;
  uint32_t queue = 0;
  uint32_t n_ctx = 0;  // positions a request may use
};

nlohmann::json props_route(const ServerFacts& facts, const Scheduler& scheduler);
// One slot as /slots shows it; the slot's request when it runs one.
nlohmann::json slot_json(const SlotInfo& slot, const ServerFacts& facts, uint32_t n_ctx);
nlohmann::json slots_route(const ServerFacts& facts, const Scheduler& scheduler);

}  // namespace ember::server
