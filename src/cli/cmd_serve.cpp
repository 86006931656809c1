// `ember serve`: an OpenAI-compatible HTTP server (src/server) over one loaded model, with
// continuous batching over --parallel sequence slots, and/or text-to-3D over a TRELLIS pipeline
// (--stages); the web page at / for both. SIGTERM/SIGINT: stop admitting, let
// in-flight requests finish for --shutdown-grace seconds, cancel the rest, exit 0.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <pthread.h>
#include <thread>

#include "cli/llm_options.h"
#include "common/error.h"
#include "server/http_server.h"
#include "server/scheduler.h"
#include "server/text_to_3d_service.h"

namespace ember::cli {

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "serve the model over an OpenAI-compatible HTTP API (chat, completions, streaming)");
  struct Opts {
    LlmOptions llm;
    server::ServerOptions http;
    server::SchedulerOptions sched;
    double grace_s = 10;
    std::vector<std::string> cors;
    std::string log_format = "text";
    std::string stages;
  };
  auto o = std::make_shared<Opts>();
  o->llm.add_to(*cmd, /*with_sampling=*/false);
  cmd->get_option("--model")->required(false);  // --stages alone serves text-to-3D only
  cmd->add_option("--host", o->http.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", o->http.port, "port to listen on, 1-65535 (0 = any free port, printed at start)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  auto* key_opt = cmd->add_option("--api-key", o->http.api_key, "require 'Authorization: Bearer KEY' on /v1/* routes");
  cmd->add_option("--model-name", o->http.model_name, "model id reported by /v1/models (default: the model directory's name)");
  cmd->add_option("--parallel", o->sched.parallel, "sequence slots decoded together (>= the pack's maxQueries)")->capture_default_str();
  cmd->add_option("--queue", o->sched.queue, "requests that may wait for a slot; beyond them 503")->capture_default_str();
  cmd->add_option("--snapshot-interval", o->sched.snapshot_interval,
                  "prompt reuse: positions between two saved conv states of a slot's prompt (docs/server-slots.md)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-body", o->http.max_body_bytes, "largest request body in bytes (413 beyond)")->capture_default_str();
  cmd->add_option("--max-client-connections", o->http.max_client_connections,
                  "open connections one client address may hold (0 = no cap; behind a proxy all clients share its address)")
      ->capture_default_str();
  cmd->add_option("--header-timeout", o->http.header_timeout_s, "seconds a request's head may take to arrive (408 beyond)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--body-timeout", o->http.body_timeout_s, "seconds a request's body may take after its head (408 beyond)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  o->llm.add_context_option(*cmd);
  cmd->add_option("-n,--default-max-tokens", o->http.default_max_tokens, "max_tokens when a request gives none")->capture_default_str();
  cmd->add_option("--max-tokens-cap", o->http.max_tokens_cap, "lower any larger max_tokens to this (0 = only the context bounds it)")
      ->capture_default_str();
  cmd->add_option("--stages", o->stages, "also serve text-to-3D (POST /v1/text-to-3d, the web page's 3D tab) from this TRELLIS pipeline folder")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--shutdown-grace", o->grace_s, "seconds in-flight requests may finish after SIGTERM/SIGINT")->capture_default_str();
  cmd->add_option("--cors", o->cors, "let browser pages from ORIGIN call the API (repeatable or comma-separated; * = any origin)")
      ->type_name("ORIGIN");
  auto* log_opt = cmd->add_option("--log-format", o->log_format, "per-request log line on stderr: text, json or off (--quiet: off unless given)")
                      ->capture_default_str();
  cmd->callback([o, key_opt, log_opt] {
    if (o->llm.model.empty() && o->stages.empty())
      throw Error("nothing to serve", "--model", "give --model DIR (an LLM pack), --stages DIR (a TRELLIS pipeline folder), or both");
    // An empty key would start an open server while the user meant to protect it.
    if (key_opt->count() > 0 && o->http.api_key.empty())
      throw Error("the API key is empty", "--api-key", "give a non-empty key, or leave out --api-key for a server without one");
    // Checked before the model loads: a typo should not cost the load time.
    o->http.cors = server::CorsPolicy(o->cors);
    o->http.log_format = server::parse_log_format(o->log_format);
    if (o->llm.quiet && log_opt->count() == 0) o->http.log_format = server::LogFormat::Off;
    // Signals are taken by one thread with sigwait; every other thread (created below) inherits the mask.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error return, not a death

    if (o->http.model_name.empty() && !o->llm.model.empty())
      o->http.model_name = std::filesystem::absolute(o->llm.model).lexically_normal().filename().string();
    if (o->http.model_name.empty()) o->http.model_name = "ember";
    o->http.model_path = o->llm.model;
    o->http.queue = o->sched.queue;
    std::unique_ptr<llm::Session> session;
    std::unique_ptr<server::Scheduler> scheduler;
    if (!o->llm.model.empty()) {
      llm::SessionOptions so = o->llm.session();
      so.sequences = std::max<uint32_t>(1, o->sched.parallel);  // one cache slot per sequence slot
      session = std::make_unique<llm::Session>(o->llm.model, so);
      scheduler = std::make_unique<server::Scheduler>(*session, o->sched);
      o->http.context = o->llm.context(scheduler->capacity());
    }
    std::unique_ptr<server::TextTo3DService> text_to_3d;
    if (!o->stages.empty()) text_to_3d = std::make_unique<server::TextTo3DService>(o->stages, o->llm.gpu.device);
    auto http = scheduler ? std::make_unique<server::HttpServer>(*session, *scheduler, o->http) : std::make_unique<server::HttpServer>(o->http);
    http->set_text_to_3d(text_to_3d.get());
    const int port = http->bind();
    std::printf("ember serve: listening on http://%s:%d (", o->http.host.c_str(), port);
    if (scheduler)
      std::printf("model %s, %u slots, queue %u, context %u", o->http.model_name.c_str(), scheduler->parallel(), o->sched.queue, o->http.context);
    if (text_to_3d) std::printf("%stext-to-3d %s", scheduler ? "; " : "", o->stages.c_str());
    std::printf(")\n");
    std::fflush(stdout);
    std::thread listener([&] { http->listen(); });
    int sig = 0;
    sigwait(&sigs, &sig);
    std::fprintf(stderr, "ember serve: %s: finishing in-flight requests (up to %.0f s)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT", o->grace_s);
    if (scheduler) scheduler->shutdown(std::chrono::milliseconds(static_cast<int64_t>(o->grace_s * 1000)));
    http->stop();
    listener.join();
    std::fprintf(stderr, "ember serve: stopped\n");
  });
}

}  // namespace ember::cli
