// The HTTP face of `ember serve`: OpenAI's routes over the scheduler, API-key check, OpenAI-style
// error bodies for every failure (400/401/404/405/408/413/431/500/503) and per-route request
// metrics. The sockets, limits and deadlines are http_listener.h's.
//
//   POST /v1/chat/completions   POST /v1/completions   GET /v1/models[/{id}]
//   GET /health                 GET /metrics (Prometheus text; no API key needed, like /health)
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "llm/session.h"
#include "server/chat_prompt.h"
#include "server/http_listener.h"
#include "server/metrics.h"
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
};

class HttpServer {
 public:
  HttpServer(llm::Session& session, Scheduler& scheduler, const ServerOptions& options);
  ~HttpServer();
  // Binds the listening socket exclusively; returns the port. Throws ember::Error when it cannot.
  int bind();
  // Serves until stop(); returns after every worker has finished its connection.
  void listen();
  void stop();
  Metrics& metrics() { return metrics_; }

 private:
  void handle(const HttpRequest& req, HttpResponder& res);
  void route(const HttpRequest& req, HttpResponder& res);
  void generation(const HttpRequest& req, HttpResponder& res, bool chat);

  llm::Session& session_;
  Scheduler& scheduler_;
  ServerOptions options_;
  Metrics metrics_;
  std::unique_ptr<HttpListener> listener_;
  std::shared_ptr<const ChatPrompt> chat_prompt_;  // the pack's chat template, or LFM2's
};

}  // namespace ember::server
