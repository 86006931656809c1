// The server's counters in the Prometheus text format (GET /metrics): requests by route and
// status, tokens in and out, queue depth and active slots, and histograms of the time to first
// token and of per-request decode speed, and connections accepted, refused, timed out and reset. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ember::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  // Appends the _bucket/_sum/_count lines of `name`.
  void render(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void request(const std::string& route, int status);
  // Connection-level events the socket layer reports: "accepted", "rejected_per_client",
  // "rejected_capacity", "timed_out", "reset".
  void connection(const std::string& event);
  // A finished generation: tokens in/out and its timing.
  void generation(uint32_t prompt_tokens, uint32_t completion_tokens, double ttft_s, double tokens_per_s);
  // `queued`, `active`, `slots`: the scheduler's state now.
  std::string render(uint32_t queued, uint32_t active, uint32_t slots, uint64_t steps, uint64_t batched_rows, size_t open_connections) const;
  // The scheduler's prompt counters: positions prefilled, and positions slot caches gave instead.
  static std::string render_prompt_cache(uint64_t prefilled, uint64_t cached);

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> connections_;
  uint64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  Histogram ttft_, tokens_per_s_;
};

}  // namespace ember::server
