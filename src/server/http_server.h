// The HTTP face of `ember serve` (cpp-httplib): OpenAI's routes over the scheduler, API-key
// check, body limit, OpenAI-style error bodies for every failure (400/401/404/405/413/500/503)
// and per-route request metrics.
//
//   POST /v1/chat/completions   POST /v1/completions   GET /v1/models[/{id}]
//   GET /health                 GET /metrics (Prometheus text; no API key needed, like /health)
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <httplib.h>

#include "llm/session.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace ember::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                 // 0 = any free port (bind() returns it)
  std::string api_key;             // empty = no check; else "Authorization: Bearer KEY" on /v1/*
  std::string model_name;          // the id /v1/models reports and responses carry
  size_t max_body_bytes = 1 << 20; // larger bodies get 413
  uint32_t default_max_tokens = 256;
  uint32_t max_tokens_cap = 0;     // per-request max_tokens are lowered to this (0 = only the context bounds them)
  int threads = 0;                 // HTTP worker threads (0 = enough for slots + queue + idle keep-alives)
};

class HttpServer {
 public:
  HttpServer(llm::Session& session, Scheduler& scheduler, const ServerOptions& options);
  ~HttpServer();
  // Binds the listening socket; returns the port. Throws ember::Error when it cannot.
  int bind();
  // Serves until stop(); returns after every worker has finished its connection.
  void listen();
  void stop();
  Metrics& metrics() { return metrics_; }

 private:
  void routes();
  void generation(const httplib::Request& req, httplib::Response& res, bool chat);

  llm::Session& session_;
  Scheduler& scheduler_;
  ServerOptions options_;
  Metrics metrics_;
  std::unique_ptr<httplib::Server> http_;
};

}  // namespace ember::server
