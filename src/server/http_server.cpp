#include "server/http_server.h"

#include <limits>
#include <set>

#include "common/error.h"
#include "server/api_error.h"
#include "server/openai_format.h"
#include "server/request_parse.h"

namespace ember::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::set<std::string> kRoutes = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics"};

// Metric label of a path: a known route or "other" (a fuzzer must not create label series).
std::string route_label(const std::string& path) {
  if (kRoutes.count(path)) return path;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  return "other";
}

void send_error(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void send_api_error(httplib::Response& res, const ApiError& e) {
  if (e.status() == 503) res.set_header("Retry-After", "1");
  send_error(res, e.status(), dump(e.body()));
}

bool same_key(const std::string& a, const std::string& b) {  // no early exit on the first difference
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); i++) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

HttpServer::HttpServer(llm::Session& session, Scheduler& scheduler, const ServerOptions& options)
    : session_(session), scheduler_(scheduler), options_(options), http_(std::make_unique<httplib::Server>()) {
  const int threads = options.threads > 0 ? options.threads : static_cast<int>(std::max<uint32_t>(32, 2 * (scheduler.parallel() + 32) + 8));
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http_->set_payload_max_length(options.max_body_bytes);
  // No cap on requests per keep-alive connection: clients (and nginx upstream pools) reuse connections
  // for as long as they like; idle ones still time out.
  http_->set_keep_alive_max_count(std::numeric_limits<size_t>::max());
  http_->set_tcp_nodelay(true);  // headers and body go out as separate writes: no Nagle delay between them
  scheduler_.on_done = [this](const Job& job) {
    metrics_.generation(static_cast<uint32_t>(job.request().prompt.size()), job.generated(), job.ttft_seconds(), job.decode_tokens_per_second());
  };
  routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  int port = options_.port;
  bool ok = port == 0 ? (port = http_->bind_to_any_port(options_.host)) > 0 : http_->bind_to_port(options_.host, port);
  if (!ok)
    throw Error("cannot listen on " + options_.host + ":" + std::to_string(options_.port), "--host/--port",
                "pick a free port (or --port 0 for any) and an address of this machine");
  return port;
}

void HttpServer::listen() { http_->listen_after_bind(); }
void HttpServer::stop() { http_->stop(); }

void HttpServer::routes() {
  auto& h = *http_;
  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (options_.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0 && same_key(auth.substr(7), options_.api_key)) return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, 401, error_body(auth.empty() ? "missing API key: send 'Authorization: Bearer KEY'" : "incorrect API key provided",
                                    "invalid_request_error", std::nullopt, "invalid_api_key"));
    return httplib::Server::HandlerResponse::Handled;
  });
  // Failures httplib detects itself (no route, body too large, bad request line) get JSON bodies.
  h.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours already
    if (res.status == 404 && kRoutes.count(req.path)) {
      const bool post = req.path.rfind("/v1/c", 0) == 0;
      res.set_header("Allow", post ? "POST" : "GET");
      send_error(res, 405, error_body("method " + req.method + " is not allowed on " + req.path + " (use " + (post ? "POST" : "GET") + ")",
                                      "invalid_request_error", std::nullopt, "method_not_allowed"));
    } else if (res.status == 404) {
      send_error(res, 404, error_body("unknown route " + req.method + " " + req.path, "invalid_request_error", std::nullopt, "not_found"));
    } else if (res.status == 413) {
      send_error(res, 413, error_body("the request body is larger than the server's limit", "invalid_request_error", std::nullopt,
                                      "request_too_large"));
    } else {
      send_error(res, res.status, error_body("the request could not be handled (HTTP " + std::to_string(res.status) + ")",
                                             res.status >= 500 ? "server_error" : "invalid_request_error"));
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      send_api_error(res, e);
    } catch (const std::exception& e) {
      send_error(res, 500, error_body(std::string("internal error: ") + e.what(), "server_error"));
    } catch (...) {
      send_error(res, 500, error_body("internal error", "server_error"));
    }
  });
  h.set_logger([this](const httplib::Request& req, const httplib::Response& res) { metrics_.request(route_label(req.path), res.status); });

  h.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { generation(req, res, true); });
  h.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { generation(req, res, false); });
  auto model_json = [this] {
    return json{{"id", options_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "ember"},
                {"context_length", scheduler_.capacity()}};
  };
  h.Get("/v1/models", [model_json](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump(json{{"object", "list"}, {"data", json::array({model_json()})}}), "application/json");
  });
  h.Get(R"(/v1/models/(.+))", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != options_.model_name)
      return send_error(res, 404, error_body("the model '" + std::string(req.matches[1]) + "' does not exist", "invalid_request_error",
                                             "model", "model_not_found"));
    res.set_content(dump(model_json()), "application/json");
  });
  h.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump(json{{"status", "ok"}, {"slots", scheduler_.parallel()}, {"active", scheduler_.active()}, {"queued", scheduler_.queued()}}),
                    "application/json");
  });
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(scheduler_.queued(), scheduler_.active(), scheduler_.parallel(), scheduler_.steps(), scheduler_.batched_rows()),
                    "text/plain; version=0.0.4");
  });
}

void HttpServer::generation(const httplib::Request& req, httplib::Response& res, bool chat) {
  ParseLimits limits{.capacity = scheduler_.capacity(), .default_max_tokens = options_.default_max_tokens,
                     .max_tokens_cap = options_.max_tokens_cap};
  const auto& tok = session_.tokenizer();
  ParsedRequest p;
  try {
    p = chat ? parse_chat_request(req.body, tok, limits) : parse_completion_request(req.body, tok, limits);
  } catch (const ApiError& e) {
    return send_api_error(res, e);
  } catch (const Error& e) {  // e.g. text the tokenizer refuses
    return send_api_error(res, ApiError::bad_request(e.what(), chat ? "messages" : "prompt"));
  }
  const Usage usage0{static_cast<uint32_t>(p.job.prompt.size()), 0};
  const bool stream = p.stream, include_usage = p.include_usage;
  std::shared_ptr<Job> job;
  try {
    job = scheduler_.submit(std::move(p.job));
  } catch (const ApiError& e) {
    return send_api_error(res, e);
  }
  const ResponseMeta meta = new_meta(chat, options_.model_name);

  if (!stream) {
    std::string text;
    Job::Update u;
    do {
      u = job->wait(std::chrono::milliseconds(1000));
      text += u.text;
    } while (!u.done);
    if (u.finish == Finish::Error) return send_error(res, 500, error_body(u.error, "server_error"));
    res.set_content(dump(full_response(meta, text, u.finish, {usage0.prompt_tokens, u.completion_tokens})), "application/json");
    return;
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // nginx: pass events through unbuffered
  struct StreamState {
    bool started = false, finished = false;
    Clock::time_point last_write = Clock::now();
  };
  auto st = std::make_shared<StreamState>();
  res.set_chunked_content_provider(
      "text/event-stream",
      [job, meta, usage0, include_usage, st](size_t, httplib::DataSink& sink) {
        auto send = [&](const std::string& s) {
          if (!sink.write(s.data(), s.size())) {  // the client is gone: free its slot
            job->cancel();
            return false;
          }
          st->last_write = Clock::now();
          return true;
        };
        if (!st->started) {
          st->started = true;
          if (meta.chat) return send(sse_event(stream_chunk(meta, "", std::nullopt, true)));
        }
        Job::Update u = job->wait(std::chrono::milliseconds(250));
        if (!u.text.empty() && !send(sse_event(stream_chunk(meta, u.text, std::nullopt, false)))) return false;
        if (!u.done) {
          // An SSE comment now and then: clients ignore it, and it finds a client gone while queued.
          if (Clock::now() - st->last_write > std::chrono::seconds(2)) return send(": keep-alive\n\n");
          return true;
        }
        std::string tail;
        if (u.finish == Finish::Error)
          tail = "data: " + error_body(u.error, "server_error") + "\n\n";
        else
          tail = sse_event(stream_chunk(meta, "", u.finish, false));
        if (include_usage && u.finish != Finish::Error) tail += sse_event(usage_chunk(meta, {usage0.prompt_tokens, u.completion_tokens}));
        tail += kSseDone;
        if (!send(tail)) return false;
        st->finished = true;
        sink.done();
        return true;
      },
      [job](bool success) {
        if (!success) job->cancel();
      });
}

}  // namespace ember::server
