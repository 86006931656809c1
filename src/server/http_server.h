// The HTTP face of `ember serve`: OpenAI's routes over the scheduler, API-key check, OpenAI-style
// error bodies for every failure (400/401/404/405/408/413/431/500/503) and per-route request
// metrics. The sockets, limits and deadlines are http_listener.h's.
//
//   POST /v1/chat/completions   POST /v1/completions   GET /v1/models[/{id}]
//   POST /v1/responses (responses_api.h)
//   POST /tokenize  POST /detokenize  GET /props  GET /slots (llama-server's, llama_endpoints.h)
//   GET /health                 GET /metrics (Prometheus text; no API key needed, like /health)
//   GET|POST /v1/text-to-3d     GET / and its files (the web page, web/; no API key: the page asks for it)
// With --cors, browsers of the listed origins get Access-Control-* headers and their preflights
// (OPTIONS) a 204 (cors.h); each request is logged in one line on stderr (request_log.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "llm/session.h"
#include "server/cors.h"
#include "server/chat_prompt.h"
#include "server/http_listener.h"
#include "server/metrics.h"
#include "server/request_log.h"
#include "server/scheduler.h"

namespace ember::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                 // 0 = any free port (bind() returns it)
  std::string api_key;             // empty = no check; else "Authorization: Bearer KEY" on /v1/*
  std::string model_name;          // the id /v1/models reports and responses carry
  size_t max_body_bytes = 1 << 20; // larger bodies get 413, whatever their framing
  size_t max_client_connections = 128;  // open connections from one address (0 = no cap; raise it behind a proxy)
  double header_timeout_s = 10;    // a request's head must arrive within this (408 beyond)
  double body_timeout_s = 60;      // and its body within this after the head
  uint32_t default_max_tokens = 256;
  uint32_t max_tokens_cap = 0;     // per-request max_tokens are lowered to this (0 = only the context bounds them)
  int threads = 0;                 // HTTP worker threads (0 = enough for slots + queue + idle keep-alives)
  CorsPolicy cors;                 // origins browsers may call from (none = no CORS headers)
  LogFormat log_format = LogFormat::Text;  // the per-request line on stderr
  std::string model_path;          // the model directory, as /props reports it
  uint32_t context = 0;            // positions a request may use, prompt + completion (0 = a slot's capacity)
  uint32_t queue = 0;              // the scheduler's queue places, as /props reports them
};

class TextTo3DService;

class HttpServer {
 public:
  HttpServer(llm::Session& session, Scheduler& scheduler, const ServerOptions& options);
  // Without a model (`ember serve --stages DIR` alone): the web page, /health, /metrics and
  // /v1/text-to-3d; the LLM routes answer 404 saying how to load one.
  explicit HttpServer(const ServerOptions& options);
  ~HttpServer();
  // Binds the listening socket exclusively; returns the port. Throws ember::Error when it cannot.
  int bind();
  // Serves until stop(); returns after every worker has finished its connection.
  void listen();
  void stop();
  Metrics& metrics() { return metrics_; }
  // The pipeline behind /v1/text-to-3d (`--stages`); without one the route says how to get it.
  void set_text_to_3d(TextTo3DService* service) { text_to_3d_ = service; }

 private:
  void handle(const HttpRequest& req, HttpResponder& res);
  void route(const HttpRequest& req, HttpResponder& res);
  void generation(const HttpRequest& req, HttpResponder& res, bool chat);

  HttpServer(llm::Session* session, Scheduler* scheduler, const ServerOptions& options);
  llm::Session* session_;
  Scheduler* scheduler_;
  ServerOptions options_;
  Metrics metrics_;
  RequestLog log_;
  std::unique_ptr<HttpListener> listener_;
  TextTo3DService* text_to_3d_ = nullptr;
  std::shared_ptr<const ChatPrompt> chat_prompt_;  // the pack's chat template, or LFM2's
};

}  // namespace ember::server
