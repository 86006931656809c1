#include "server/http_server.h"

#include <algorithm>
#include <set>

#include "common/error.h"
#include "server/api_error.h"
#include "server/llama_endpoints.h"
#include "server/logprobs_format.h"
#include "server/openai_format.h"
#include "server/request_parse.h"
#include "server/responses_api.h"
#include "server/text_to_3d_service.h"
#include "server/web_assets.h"
#include "server/tool_reply.h"

namespace ember::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::set<std::string> kRoutes = {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics",
                                       "/v1/responses", "/tokenize", "/detokenize", "/props", "/slots", "/v1/text-to-3d"};
const std::set<std::string> kPostRoutes = {"/v1/chat/completions", "/v1/completions", "/v1/responses", "/tokenize", "/detokenize"};

// Metric label of a path: a known route or "other" (a fuzzer must not create label series).
std::string route_label(const std::string& path) {
  if (kRoutes.count(path)) return path;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  if (find_web_asset(path)) return "web";
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

// Positions one request may use: -c when given (at most a slot's), else a slot's capacity.
uint32_t context_of(const ServerOptions& o, const Scheduler& s) { return o.context ? std::min(o.context, s.capacity()) : s.capacity(); }

bool same_key(const std::string& a, const std::string& b) {  // no early exit on the first difference
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); i++) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

HttpServer::HttpServer(llm::Session& session, Scheduler& scheduler, const ServerOptions& options)
    : HttpServer(&session, &scheduler, options) {}

HttpServer::HttpServer(const ServerOptions& options) : HttpServer(nullptr, nullptr, options) {}

HttpServer::HttpServer(llm::Session* session, Scheduler* scheduler, const ServerOptions& options)
    : session_(session), scheduler_(scheduler), options_(options), log_(options.log_format) {
  if (options.max_body_bytes == 0) throw Error("the body limit must be positive", "--max-body");
  if (session) chat_prompt_ = ChatPrompt::for_model_dir(session->pack().dir().string());
  ListenerOptions lo;
  lo.host = options.host;
  lo.port = options.port;
  lo.limits.max_body_bytes = options.max_body_bytes;
  // Workers run complete requests only (reading is the poll thread's): one per slot and queued
  // request waiting on its generation, and some for the quick routes.
  lo.workers = options.threads > 0 ? options.threads : static_cast<int>(std::max<uint32_t>(32, 2 * ((scheduler ? scheduler->parallel() : 0) + 32) + 8));
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
  if (scheduler_)
    scheduler_->on_done = [this](const Job& job) {
      // The n choices of a request share its prompt: it counts once.
      const uint32_t prompt = job.request().choice == 0 ? static_cast<uint32_t>(job.request().prompt.size()) : 0;
      metrics_.generation(prompt, job.generated(), job.ttft_seconds(), job.decode_tokens_per_second());
    };
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() { return listener_->bind(); }
void HttpServer::listen() { listener_->run(); }
void HttpServer::stop() { listener_->stop(); }

void HttpServer::handle(const HttpRequest& req, HttpResponder& res) {
  const auto start = Clock::now();
  take_request_tokens();  // nothing from an earlier request on this worker
  for (auto& [name, value] : options_.cors.response_headers(req)) res.add_header(name, value);
  try {
    route(req, res);
  } catch (const ApiError& e) {
    if (!res.started()) send_api_error(res, e);
  } catch (const std::exception& e) {
    if (!res.started()) res.send(500, kJson, error_body(std::string("internal error: ") + e.what(), "server_error"));
  }
  metrics_.request(route_label(req.path), res.status());
  if (log_.enabled()) {
    auto [prompt, completion] = take_request_tokens();
    log_.write({req.method, req.path, res.status(), prompt, completion, std::chrono::duration<double, std::milli>(Clock::now() - start).count()});
  }
}

void HttpServer::route(const HttpRequest& req, HttpResponder& res) {
  const std::string& path = req.path;
  // Browsers send preflights without credentials: answer them before the key check.
  if (options_.cors.enabled() && CorsPolicy::is_preflight(req)) {
    auto h = options_.cors.preflight_headers(req);
    if (!h)
      return (void)res.send(403, kJson,
                            error_body("origin '" + req.header("origin") + "' is not allowed; start the server with --cors " + req.header("origin"),
                                       "invalid_request_error", std::nullopt, "origin_not_allowed"));
    return (void)res.send(204, "", "", *h);
  }
  const bool keyed = path.rfind("/v1/", 0) == 0 || path == "/tokenize" || path == "/detokenize" || path == "/props" || path == "/slots";
  if (!options_.api_key.empty() && keyed) {
    const std::string auth = req.header("authorization");
    if (auth.rfind("Bearer ", 0) != 0 || !same_key(auth.substr(7), options_.api_key))
      return (void)res.send(401, kJson,
                            error_body(auth.empty() ? "missing API key: send 'Authorization: Bearer KEY'" : "incorrect API key provided",
                                       "invalid_request_error", std::nullopt, "invalid_api_key"),
                            {{"WWW-Authenticate", "Bearer"}});
  }
  if (path == "/v1/text-to-3d") return serve_text_to_3d(text_to_3d_, req, res);
  if (const WebAsset* asset = find_web_asset(path)) return serve_web_asset(*asset, req, res);
  const bool post_route = kPostRoutes.count(path) > 0;
  const bool get_route = (kRoutes.count(path) && !post_route) || path.rfind("/v1/models/", 0) == 0;
  if (!post_route && !get_route)
    return (void)res.send(404, kJson, error_body("unknown route " + req.method + " " + path, "invalid_request_error", std::nullopt, "not_found"));
  if (req.method != (post_route ? "POST" : "GET"))
    return (void)res.send(405, kJson,
                          error_body("method " + req.method + " is not allowed on " + path + " (use " + (post_route ? "POST" : "GET") + ")",
                                     "invalid_request_error", std::nullopt, "method_not_allowed"),
                          {{"Allow", post_route ? "POST" : "GET"}});
  if (!scheduler_) {  // a text-to-3D server: /health and /metrics, and a 404 naming --model for the rest
    if (path == "/health") return (void)res.send(200, kJson, dump(json{{"status", "ok"}, {"slots", 0}, {"active", 0}, {"queued", 0}}));
    if (path == "/metrics") return (void)res.send(200, "text/plain; version=0.0.4", metrics_.render(0, 0, 0, 0, 0, listener_->open_connections()));
    return (void)res.send(404, kJson,
                          error_body("this server has no model: start it with `ember serve --model DIR` (with --stages too for both)",
                                     "invalid_request_error", "model", "model_not_found"));
  }
  const ParseLimits limits{.capacity = context_of(options_, *scheduler_), .default_max_tokens = options_.default_max_tokens,
                           .max_tokens_cap = options_.max_tokens_cap};
  const ServerFacts facts{options_.model_name, options_.model_path, options_.default_max_tokens, options_.max_tokens_cap, options_.queue,
                          limits.capacity};
  if (path == "/v1/responses") return serve_responses(req, res, *session_, *scheduler_, limits, options_.model_name);
  if (path == "/tokenize") return (void)res.send(200, kJson, dump(tokenize_route(req.body, session_->tokenizer(), limits.max_json_depth)));
  if (path == "/detokenize") return (void)res.send(200, kJson, dump(detokenize_route(req.body, session_->tokenizer(), limits.max_json_depth)));
  if (path == "/props") return (void)res.send(200, kJson, dump(props_route(facts, *scheduler_)));
  if (path == "/slots") return (void)res.send(200, kJson, dump(slots_route(facts, *scheduler_)));
  if (post_route) return generation(req, res, path == "/v1/chat/completions");

  auto model_json = [this] {
    return json{{"id", options_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "ember"},
                {"context_length", scheduler_->capacity()}};
  };
  if (path == "/v1/models") {
    res.send(200, kJson, dump(json{{"object", "list"}, {"data", json::array({model_json()})}}));
  } else if (path.rfind("/v1/models/", 0) == 0) {
    const std::string id = path.substr(11);
    if (id != options_.model_name)
      return (void)res.send(404, kJson, error_body("the model '" + id + "' does not exist", "invalid_request_error", "model", "model_not_found"));
    res.send(200, kJson, dump(model_json()));
  } else if (path == "/health") {
    res.send(200, kJson, dump(json{{"status", "ok"}, {"slots", scheduler_->parallel()}, {"active", scheduler_->active()}, {"queued", scheduler_->queued()}}));
  } else {  // /metrics
    res.send(200, "text/plain; version=0.0.4",
             metrics_.render(scheduler_->queued(), scheduler_->active(), scheduler_->parallel(), scheduler_->steps(), scheduler_->batched_rows(),
                             listener_->open_connections()) +
                 Metrics::render_prompt_cache(scheduler_->prefilled_tokens(), scheduler_->cached_tokens()));
  }
}

void HttpServer::generation(const HttpRequest& req, HttpResponder& res, bool chat) {
  ParseLimits limits{.capacity = context_of(options_, *scheduler_), .default_max_tokens = options_.default_max_tokens,
                     .max_tokens_cap = options_.max_tokens_cap};
  const auto& tok = session_->tokenizer();
  ParsedRequest p;
  try {
    p = chat ? parse_chat_request(req.body, tok, limits, chat_prompt_.get()) : parse_completion_request(req.body, tok, limits);
  } catch (const ApiError& e) {
    return send_api_error(res, e);
  } catch (const Error& e) {  // e.g. text the tokenizer refuses
    return send_api_error(res, ApiError::bad_request(e.what(), chat ? "messages" : "prompt"));
  }
  const uint32_t prompt_tokens = static_cast<uint32_t>(p.job.prompt.size());
  note_request_tokens(prompt_tokens, 0);
  if (options_.context) p.job.max_tokens = std::min(p.job.max_tokens, limits.capacity - prompt_tokens);  // -c bounds the completion too
  const bool stream = p.stream, include_usage = p.include_usage, logprobs = p.job.logprobs;
  const ToolRequest tool_request = p.tools;
  // ToolReply splits one choice's text into content and calls.
  if (tool_request.offered() && p.n > 1)
    return send_api_error(res, ApiError::bad_request("n > 1 is not supported together with tools: ask for one choice", "n"));
  std::vector<std::shared_ptr<Job>> jobs;
  try {
    jobs = scheduler_->submit(std::move(p.job), p.n);
  } catch (const ApiError& e) {
    return send_api_error(res, e);
  }
  const size_t n = jobs.size();
  const ResponseMeta meta = new_meta(chat, options_.model_name);
  std::optional<ToolReply> tools;  // the output is split into content and tool calls
  if (chat && tool_request.offered()) tools.emplace(tool_request, meta);
  constexpr auto kPoll = std::chrono::milliseconds(100);  // how soon a vanished client frees its slot
  // With several choices each wait is short: a choice's text must not wait for another's.
  const auto poll = n == 1 ? kPoll : std::chrono::milliseconds(10);
  auto cancel_all = [&] {
    for (auto& j : jobs) j->cancel();
  };
  std::vector<Choice> choices(n);
  std::vector<bool> done(n, false);
  Usage usage{prompt_tokens, 0, 0};
  std::string error;
  // Each choice has its own logprobs (entries not written yet) and writer (its text offsets).
  std::vector<std::vector<kernels::TopLogprobs>> lps(n);
  std::vector<LogprobsWriter> writers(n, LogprobsWriter(tok, chat));
  // Takes what choice i has now: its new text and logprobs, and at its end its finish, tokens and
  // any error.
  auto take = [&](size_t i) {
    Job::Update u = jobs[i]->wait(poll);
    lps[i].insert(lps[i].end(), u.logprobs.begin(), u.logprobs.end());
    if (u.done) {
      done[i] = true;
      choices[i].finish = u.finish;
      usage.completion_tokens += u.completion_tokens;
      if (u.finish == Finish::Error && error.empty()) error = u.error;
      if (i == 0) usage.cached_tokens = jobs[0]->cached_tokens();
    }
    return u;
  };
  auto all_done = [&] { return std::all_of(done.begin(), done.end(), [](bool d) { return d; }); };

  if (!stream) {
    while (!all_done()) {
      for (size_t i = 0; i < n; i++) {
        if (done[i]) continue;
        Job::Update u = take(i);
        choices[i].text += u.text;
        if (!error.empty()) cancel_all();  // the answer is a 500: the other choices need not finish
        if (!u.done && res.client_gone()) {  // nobody will read the answer: free the slots now
          cancel_all();
          return res.abandon();
        }
      }
    }
    note_request_tokens(prompt_tokens, usage.completion_tokens);
    if (!error.empty()) return (void)res.send(500, kJson, error_body(error, "server_error"));
    json full = full_response(meta, choices, usage);
    if (logprobs)
      for (size_t i = 0; i < n; i++) writers[i].attach(full, lps[i], i);
    if (tools) tools->complete(full, choices[0].text, choices[0].finish);
    res.send(200, kJson, dump(full));
    return;
  }

  // X-Accel-Buffering: nginx passes the events through unbuffered.
  auto gone = [&] {
    cancel_all();
    res.abandon();
  };
  if (!res.begin_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}})) return gone();
  if (meta.chat)
    for (size_t i = 0; i < n; i++)
      if (!res.write(sse_event(stream_chunk(meta, "", std::nullopt, true, static_cast<uint32_t>(i))))) return gone();
  auto last_write = Clock::now();
  while (!all_done()) {
    for (size_t i = 0; i < n; i++) {
      if (done[i]) continue;
      Job::Update u = take(i);
      const auto index = static_cast<uint32_t>(i);
      std::string out;
      if (!u.text.empty()) {
        if (tools) {  // one choice; tool-call deltas carry no logprobs
          out += tools->stream(u.text);
        } else {
          json chunk = stream_chunk(meta, u.text, std::nullopt, false, index);
          if (logprobs) writers[i].attach(chunk, lps[i]);
          out += sse_event(chunk);
        }
        lps[i].clear();
      }
      if (u.done && u.finish != Finish::Error) {
        json chunk = stream_chunk(meta, "", u.finish, false, index);
        if (tools) {
          out += tools->stream_end(u.finish);
          chunk["choices"][0]["finish_reason"] = tools->finish_reason(u.finish);
        } else if (logprobs && !lps[i].empty()) {
          writers[i].attach(chunk, lps[i]);  // ids that made no text yet
        }
        out += sse_event(chunk);
      }
      if (!out.empty()) {
        if (!res.write(out)) return gone();
        last_write = Clock::now();
      }
      if (!error.empty()) break;
    }
    if (!error.empty()) {  // one choice failed: the others end with it
      cancel_all();
      break;
    }
    if (all_done()) break;
    // An SSE comment now and then: clients ignore it, and it finds a client gone while queued.
    if (res.client_gone()) return gone();
    if (Clock::now() - last_write > std::chrono::seconds(2)) {
      if (!res.write(": keep-alive\n\n")) return gone();
      last_write = Clock::now();
    }
  }
  note_request_tokens(prompt_tokens, usage.completion_tokens);
  std::string tail;
  if (!error.empty()) tail = "data: " + error_body(error, "server_error") + "\n\n";
  else if (include_usage) tail += sse_event(usage_chunk(meta, usage));
  tail += kSseDone;
  if (!res.write(tail) || !res.end_stream()) return gone();
}

}  // namespace ember::server
