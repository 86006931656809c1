#include "server/metrics.h"

#include <cstdio>

namespace ember::server {
namespace {

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

}  // namespace

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) i++;
  counts_[i]++;
  sum_ += v;
  count_++;
}

void Histogram::render(std::string& out, const std::string& name) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); i++) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + (i < bounds_.size() ? num(bounds_[i]) : std::string("+Inf")) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      tokens_per_s_({1, 5, 10, 25, 50, 100, 200, 400, 800, 1600, 3200}) {}

void Metrics::request(const std::string& route, int status) {
  std::lock_guard lock(mutex_);
  requests_[{route, status}]++;
}

void Metrics::connection(const std::string& event) {
  std::lock_guard lock(mutex_);
  connections_[event]++;
}

void Metrics::generation(uint32_t prompt_tokens, uint32_t completion_tokens, double ttft_s, double tokens_per_s) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += prompt_tokens;
  completion_tokens_ += completion_tokens;
  if (completion_tokens > 0) ttft_.observe(ttft_s);
  if (completion_tokens > 1) tokens_per_s_.observe(tokens_per_s);
}

std::string Metrics::render(uint32_t queued, uint32_t active, uint32_t slots, uint64_t steps, uint64_t batched_rows, size_t open_connections) const {
  std::lock_guard lock(mutex_);
  std::string out;
  out += "# HELP ember_requests_total HTTP requests by route and status.\n# TYPE ember_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    out += "ember_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  auto count = [&](const std::string& event) {
    auto it = connections_.find(event);
    return std::to_string(it == connections_.end() ? 0 : it->second);
  };
  out += "# HELP ember_connections_total TCP connections accepted (refused ones included).\n# TYPE ember_connections_total counter\n";
  out += "ember_connections_total " + count("accepted") + "\n";
  out += "# HELP ember_connections_open Connections open now.\n# TYPE ember_connections_open gauge\n";
  out += "ember_connections_open " + std::to_string(open_connections) + "\n";
  out += "# HELP ember_connections_rejected_total Connections answered 503 and closed: over the per-client or the total cap.\n"
         "# TYPE ember_connections_rejected_total counter\n";
  out += "ember_connections_rejected_total{reason=\"per_client\"} " + count("rejected_per_client") + "\n";
  out += "ember_connections_rejected_total{reason=\"capacity\"} " + count("rejected_capacity") + "\n";
  out += "# HELP ember_connections_timed_out_total Requests whose head or body did not arrive in time (408).\n"
         "# TYPE ember_connections_timed_out_total counter\n";
  out += "ember_connections_timed_out_total " + count("timed_out") + "\n";
  out += "# HELP ember_connections_reset_total Connections the client reset or closed in the middle of a request.\n"
         "# TYPE ember_connections_reset_total counter\n";
  out += "ember_connections_reset_total " + count("reset") + "\n";
  out += "# HELP ember_prompt_tokens_total Prompt tokens of finished generations.\n# TYPE ember_prompt_tokens_total counter\n";
  out += "ember_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  out += "# HELP ember_completion_tokens_total Generated tokens.\n# TYPE ember_completion_tokens_total counter\n";
  out += "ember_completion_tokens_total " + std::to_string(completion_tokens_) + "\n";
  out += "# HELP ember_queue_depth Requests waiting for a sequence slot.\n# TYPE ember_queue_depth gauge\n";
  out += "ember_queue_depth " + std::to_string(queued) + "\n";
  out += "# HELP ember_active_slots Sequence slots generating now.\n# TYPE ember_active_slots gauge\n";
  out += "ember_active_slots " + std::to_string(active) + "\n";
  out += "# HELP ember_slots Sequence slots (--parallel).\n# TYPE ember_slots gauge\n";
  out += "ember_slots " + std::to_string(slots) + "\n";
  out += "# HELP ember_decode_steps_total Batched decode steps submitted.\n# TYPE ember_decode_steps_total counter\n";
  out += "ember_decode_steps_total " + std::to_string(steps) + "\n";
  out += "# HELP ember_batched_decode_rows_total Sequence decodes run by the batched decoder (several sequences, one weight read).\n"
         "# TYPE ember_batched_decode_rows_total counter\n";
  out += "ember_batched_decode_rows_total " + std::to_string(batched_rows) + "\n";
  out += "# HELP ember_time_to_first_token_seconds Arrival to first generated token.\n# TYPE ember_time_to_first_token_seconds histogram\n";
  ttft_.render(out, "ember_time_to_first_token_seconds");
  out += "# HELP ember_decode_tokens_per_second Per-request decode speed after the first token.\n# TYPE ember_decode_tokens_per_second histogram\n";
  tokens_per_s_.render(out, "ember_decode_tokens_per_second");
  return out;
}

std::string Metrics::render_prompt_cache(uint64_t prefilled, uint64_t cached) {
  return "# HELP ember_prefill_tokens_total Prompt positions prefilled (the n choices of a request count once).\n"
         "# TYPE ember_prefill_tokens_total counter\n"
         "ember_prefill_tokens_total " + std::to_string(prefilled) + "\n"
         "# HELP ember_prompt_cached_tokens_total Prompt positions taken from a slot's caches instead of prefilled.\n"
         "# TYPE ember_prompt_cached_tokens_total counter\n"
         "ember_prompt_cached_tokens_total " + std::to_string(cached) + "\n";
}

}  // namespace ember::server
