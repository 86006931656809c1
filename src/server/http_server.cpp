#include "server/http_server.h"

#include <set>

#include "common/error.h"
#include "server/api_error.h"
#include "server/logprobs_format.h"
#include "server/openai_format.h"
#include "server/request_parse.h"
#include "server/tool_reply.h"

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

const std::string kJson = "application/json";

void send_api_error(HttpResponder& res, const ApiError& e) {
  HttpResponder::Headers h;
  if (e.status() == 503) h.emplace_back("Retry-After", "1");
  res.send(e.status(), kJson, dump(e.body()), h);
}

// The body of a refusal by status, for the listener and the router alike.
std::string refusal_body(int status, const std::string& message) {
  const char* code = status == 413 ? "request_too_large" : status == 408 ? "request_timeout" : status == 431 ? "headers_too_large"
                     : status == 503 ? "too_many_connections" : nullptr;
  return error_body(message, status >= 500 && status != 503 ? "server_error" : "invalid_request_error", std::nullopt,
                    code ? std::optional<std::string>(code) : std::nullopt);
}

bool same_key(const std::string& a, const std::string& b) {  // no early exit on the first difference
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); i++) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

HttpServer::HttpServer(llm::Session& session, Scheduler& scheduler, const ServerOptions& options)
    : session_(session), scheduler_(scheduler), options_(options) {
  if (options.max_body_bytes == 0) throw Error("the body limit must be positive", "--max-body");
  chat_prompt_ = ChatPrompt::for_model_dir(session.pack().dir().string());
  ListenerOptions lo;
  lo.host = options.host;
  lo.port = options.port;
  lo.limits.max_body_bytes = options.max_body_bytes;
  // Workers run complete requests only (reading is the poll thread's): one per slot and queued
  // request waiting on its generation, and some for the quick routes.
  lo.workers = options.threads > 0 ? options.threads : static_cast<int>(std::max<uint32_t>(32, 2 * (scheduler.parallel() + 32) + 8));
  lo.max_per_client = options.max_client_connections;
  auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  lo.head_timeout = ms(options.header_timeout_s);
  lo.body_timeout = ms(options.body_timeout_s);
  listener_ = std::make_unique<HttpListener>(
      lo, [this](const HttpRequest& req, HttpResponder& res) { handle(req, res); },
      [this](int status, const std::string& message, const std::string&) {
        metrics_.request("other", status);
        return refusal_body(status, message);
      },
      [this](ListenerEvent e) {
        static const char* names[] = {"accepted", "rejected_per_client", "rejected_capacity", "timed_out", "reset"};
        metrics_.connection(names[static_cast<int>(e)]);
      });
  scheduler_.on_done = [this](const Job& job) {
    metrics_.generation(static_cast<uint32_t>(job.request().prompt.size()), job.generated(), job.ttft_seconds(), job.decode_tokens_per_second());
  };
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() { return listener_->bind(); }
void HttpServer::listen() { listener_->run(); }
void HttpServer::stop() { listener_->stop(); }

void HttpServer::handle(const HttpRequest& req, HttpResponder& res) {
  try {
    route(req, res);
  } catch (const ApiError& e) {
    if (!res.started()) send_api_error(res, e);
  } catch (const std::exception& e) {
    if (!res.started()) res.send(500, kJson, error_body(std::string("internal error: ") + e.what(), "server_error"));
  }
  metrics_.request(route_label(req.path), res.status());
}

void HttpServer::route(const HttpRequest& req, HttpResponder& res) {
  const std::string& path = req.path;
  if (!options_.api_key.empty() && path.rfind("/v1/", 0) == 0) {
    const std::string auth = req.header("authorization");
    if (auth.rfind("Bearer ", 0) != 0 || !same_key(auth.substr(7), options_.api_key))
      return (void)res.send(401, kJson,
                            error_body(auth.empty() ? "missing API key: send 'Authorization: Bearer KEY'" : "incorrect API key provided",
                                       "invalid_request_error", std::nullopt, "invalid_api_key"),
                            {{"WWW-Authenticate", "Bearer"}});
  }
  const bool post_route = path == "/v1/chat/completions" || path == "/v1/completions";
  const bool get_route = (kRoutes.count(path) && !post_route) || path.rfind("/v1/models/", 0) == 0;
  if (!post_route && !get_route)
    return (void)res.send(404, kJson, error_body("unknown route " + req.method + " " + path, "invalid_request_error", std::nullopt, "not_found"));
  if (req.method != (post_route ? "POST" : "GET"))
    return (void)res.send(405, kJson,
                          error_body("method " + req.method + " is not allowed on " + path + " (use " + (post_route ? "POST" : "GET") + ")",
                                     "invalid_request_error", std::nullopt, "method_not_allowed"),
                          {{"Allow", post_route ? "POST" : "GET"}});
  if (post_route) return generation(req, res, path == "/v1/chat/completions");

  auto model_json = [this] {
    return json{{"id", options_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "ember"},
                {"context_length", scheduler_.capacity()}};
  };
  if (path == "/v1/models") {
    res.send(200, kJson, dump(json{{"object", "list"}, {"data", json::array({model_json()})}}));
  } else if (path.rfind("/v1/models/", 0) == 0) {
    const std::string id = path.substr(11);
    if (id != options_.model_name)
      return (void)res.send(404, kJson, error_body("the model '" + id + "' does not exist", "invalid_request_error", "model", "model_not_found"));
    res.send(200, kJson, dump(model_json()));
  } else if (path == "/health") {
    res.send(200, kJson, dump(json{{"status", "ok"}, {"slots", scheduler_.parallel()}, {"active", scheduler_.active()}, {"queued", scheduler_.queued()}}));
  } else {  // /metrics
    res.send(200, "text/plain; version=0.0.4",
             metrics_.render(scheduler_.queued(), scheduler_.active(), scheduler_.parallel(), scheduler_.steps(), scheduler_.batched_rows(),
                             listener_->open_connections()));
  }
}

void HttpServer::generation(const HttpRequest& req, HttpResponder& res, bool chat) {
  ParseLimits limits{.capacity = scheduler_.capacity(), .default_max_tokens = options_.default_max_tokens,
                     .max_tokens_cap = options_.max_tokens_cap};
  const auto& tok = session_.tokenizer();
  ParsedRequest p;
  try {
    p = chat ? parse_chat_request(req.body, tok, limits, chat_prompt_.get()) : parse_completion_request(req.body, tok, limits);
  } catch (const ApiError& e) {
    return send_api_error(res, e);
  } catch (const Error& e) {  // e.g. text the tokenizer refuses
    return send_api_error(res, ApiError::bad_request(e.what(), chat ? "messages" : "prompt"));
  }
  const Usage usage0{static_cast<uint32_t>(p.job.prompt.size()), 0};
  const bool stream = p.stream, include_usage = p.include_usage, logprobs = p.job.logprobs;
  const ToolRequest tool_request = p.tools;
  LogprobsWriter lp_writer(tok, chat);
  std::shared_ptr<Job> job;
  try {
    job = scheduler_.submit(std::move(p.job));
  } catch (const ApiError& e) {
    return send_api_error(res, e);
  }
  const ResponseMeta meta = new_meta(chat, options_.model_name);
  std::optional<ToolReply> tools;  // the output is split into content and tool calls
  if (chat && tool_request.offered()) tools.emplace(tool_request, meta);
  constexpr auto kPoll = std::chrono::milliseconds(100);  // how soon a vanished client frees its slot

  if (!stream) {
    std::string text;
    std::vector<kernels::TopLogprobs> lps;
    Job::Update u;
    do {
      u = job->wait(kPoll);
      text += u.text;
      lps.insert(lps.end(), u.logprobs.begin(), u.logprobs.end());
      if (!u.done && res.client_gone()) {  // nobody will read the answer: free the slot now
        job->cancel();
        return res.abandon();
      }
    } while (!u.done);
    if (u.finish == Finish::Error) return (void)res.send(500, kJson, error_body(u.error, "server_error"));
    json full = full_response(meta, text, u.finish, {usage0.prompt_tokens, u.completion_tokens});
    if (logprobs) lp_writer.attach(full, lps);
    if (tools) tools->complete(full, text, u.finish);
    res.send(200, kJson, dump(full));
    return;
  }

  // X-Accel-Buffering: nginx passes the events through unbuffered.
  auto gone = [&] {
    job->cancel();
    res.abandon();
  };
  if (!res.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}})) return gone();
  if (meta.chat && !res.write(sse_event(stream_chunk(meta, "", std::nullopt, true)))) return gone();
  auto last_write = Clock::now();
  std::vector<kernels::TopLogprobs> lps;  // entries whose chunk is not written yet
  while (true) {
    Job::Update u = job->wait(kPoll);
    lps.insert(lps.end(), u.logprobs.begin(), u.logprobs.end());
    if (!u.text.empty()) {
      std::string events;
      if (tools) {  // tool-call deltas carry no logprobs
        events = tools->stream(u.text);
      } else {
        json chunk = stream_chunk(meta, u.text, std::nullopt, false);
        if (logprobs) lp_writer.attach(chunk, lps);
        events = sse_event(chunk);
      }
      lps.clear();
      if (!events.empty() && !res.write(events)) return gone();
      last_write = Clock::now();
    }
    if (!u.done) {
      // An SSE comment now and then: clients ignore it, and it finds a client gone while queued.
      if (res.client_gone()) return gone();
      if (Clock::now() - last_write > std::chrono::seconds(2)) {
        if (!res.write(": keep-alive\n\n")) return gone();
        last_write = Clock::now();
      }
      continue;
    }
    std::string tail;
    if (u.finish == Finish::Error)
      tail = "data: " + error_body(u.error, "server_error") + "\n\n";
    else {
      json chunk = stream_chunk(meta, "", u.finish, false);
      if (logprobs && !lps.empty() && !tools) lp_writer.attach(chunk, lps);
      if (tools) {
        tail = tools->stream_end(u.finish);
        chunk["choices"][0]["finish_reason"] = tools->finish_reason(u.finish);
      }
      tail += sse_event(chunk);
    }
    if (include_usage && u.finish != Finish::Error) tail += sse_event(usage_chunk(meta, {usage0.prompt_tokens, u.completion_tokens}));
    tail += kSseDone;
    if (!res.write(tail) || !res.end_stream()) return gone();
    return;
  }
}

}  // namespace ember::server
