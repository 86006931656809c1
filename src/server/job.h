// One completion request on its way through the scheduler. The scheduler thread feeds it
// generated ids (accept) and ends it (complete / fail); the client's HTTP thread waits for the
// text as it comes (wait) and may cancel it (a disconnect). Text is produced here, on the
// scheduler's side, so a stop string ends generation at exactly the token that completes it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/logprobs.h"
#include "llm/sampling.h"
#include "tokenizer/tokenizer.h"
#include "server/stop_matcher.h"

namespace ember::server {

struct JobRequest {
  std::vector<uint32_t> prompt;
  llm::SamplingOptions sampling;
  uint32_t max_tokens = 16;
  std::vector<std::string> stops;  // stop strings, matched on the decoded text
  std::vector<uint32_t> shown_special;  // special tokens whose text is output (LFM2's tool-call markers)
  // Constrained decoding and logit edits (docs/structured-output.md). grammar: GBNF text
  // (llm/grammar/gbnf.h), empty = none; response_format, the `grammar` field and tool_choice set it.
  std::string grammar;
  std::vector<std::pair<uint32_t, float>> logit_bias;  // (token id, bias in [-100, 100])
  bool logprobs = false;                               // report each sampled token's logprob
  uint32_t top_logprobs = 0;                           // and the best N alternatives (0..20)
  uint32_t choice = 0;             // index among the n choices of one request (Scheduler::submit)
};

enum class Finish { None, Stop, Length, Cancelled, Error };
const char* finish_reason(Finish f);  // OpenAI's finish_reason: "stop", else "length"

class Job {
 public:
  using Clock = std::chrono::steady_clock;
  Job(JobRequest request, const llm::Tokenizer& tokenizer, std::vector<uint32_t> stop_ids);
  const JobRequest& request() const { return request_; }

  // --- scheduler thread ---
  // One generated id; false when generation must end here (stop id, stop string, cancelled).
  bool accept(uint32_t id);
  // The logprobs of the id the next accept() takes (JobRequest::logprobs); dropped for a stop id.
  void set_logprobs(kernels::TopLogprobs lp) { pending_logprobs_ = std::move(lp); }
  // Generation ended: with a stop (id or string), out of tokens/room (length), or cancelled.
  void complete();
  void fail(const std::string& message);
  bool cancelled() const { return cancelled_.load(); }
  // Prompt positions taken from the slot's caches instead of prefilled (set at admission).
  void set_cached_tokens(uint32_t n) { cached_tokens_.store(n); }

  // --- client thread ---
  void cancel() { cancelled_.store(true); }
  struct Update {
    std::string text;  // new text since the previous wait
    bool done = false;
    Finish finish = Finish::None;
    uint32_t completion_tokens = 0;
    std::string error;  // with Finish::Error
    // Logprobs of the tokens of `text`, in order; a token whose text is still held back (a
    // partial stop string or character) may have its entry here before its text arrives.
    std::vector<kernels::TopLogprobs> logprobs;
  };
  // Waits up to `timeout` for new text or the end.
  Update wait(std::chrono::milliseconds timeout);

  // Timing and count for the metrics (scheduler thread, once done).
  uint32_t generated() const { return generated_; }
  uint32_t cached_tokens() const { return cached_tokens_.load(); }
  // The generated ids, stop id included (scheduler thread; others once wait() said done).
  const std::vector<uint32_t>& ids() const { return ids_; }
  double ttft_seconds() const;
  double decode_tokens_per_second() const;

 private:
  void publish(std::string text, bool done, Finish finish);

  JobRequest request_;
  std::vector<uint32_t> stop_ids_;
  std::vector<std::pair<uint32_t, std::string>> shown_;  // shown_special ids and their text
  llm::StreamingDetokenizer detok_;
  StopMatcher stop_;
  std::atomic<bool> cancelled_{false};
  std::atomic<uint32_t> cached_tokens_{0};
  bool stopped_ = false;  // scheduler side: hit a stop id or string
  std::atomic<uint32_t> generated_{0};  // read by /slots while the scheduler writes it
  std::vector<uint32_t> ids_;
  std::optional<kernels::TopLogprobs> pending_logprobs_;
  std::vector<kernels::TopLogprobs> accepted_logprobs_;  // not yet published
  Clock::time_point created_ = Clock::now(), first_token_{}, finished_{};

  std::mutex mutex_;
  std::condition_variable cv_;
  std::string unread_;
  std::vector<kernels::TopLogprobs> unread_logprobs_;
  bool done_ = false;
  Finish finish_ = Finish::None;
  std::string error_;
};

}  // namespace ember::server
