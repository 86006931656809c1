#include "server/job.h"

#include <algorithm>

namespace ember::server {

// A shutdown that cuts a request short reports "length": the output was truncated.
const char* finish_reason(Finish f) { return f == Finish::Stop ? "stop" : "length"; }

Job::Job(JobRequest request, const llm::Tokenizer& tokenizer, std::vector<uint32_t> stop_ids)
    : request_(std::move(request)), stop_ids_(std::move(stop_ids)), detok_(tokenizer, /*skip_special_tokens=*/true),
      stop_(request_.stops) {
  for (uint32_t id : request_.shown_special)
    if (auto t = tokenizer.id_to_token(id)) shown_.emplace_back(id, *t);
}

bool Job::accept(uint32_t id) {
  if (generated_ == 0) first_token_ = Clock::now();
  generated_++;
  ids_.push_back(id);
  if (std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end()) {
    stopped_ = true;
    pending_logprobs_.reset();  // OpenAI lists no entry for the end of generation
    return false;
  }
  if (pending_logprobs_) accepted_logprobs_.push_back(std::move(*pending_logprobs_));
  pending_logprobs_.reset();
  // Other special tokens are left out of the text; these mark tool calls for the parser.
  auto shown = std::find_if(shown_.begin(), shown_.end(), [&](const auto& s) { return s.first == id; });
  std::string text = stop_.push(shown != shown_.end() ? detok_.finish() + shown->second : detok_.push(id));
  if (stop_.matched()) stopped_ = true;
  if (!text.empty()) publish(std::move(text), false, Finish::None);
  return !stopped_ && !cancelled();
}

void Job::complete() {
  std::string tail;
  if (!stop_.matched()) tail = stop_.push(detok_.finish()) + stop_.finish();
  const Finish f = stopped_ ? Finish::Stop : cancelled() ? Finish::Cancelled : Finish::Length;
  publish(std::move(tail), true, f);
}

void Job::fail(const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    error_ = message;
  }
  publish({}, true, Finish::Error);
}

void Job::publish(std::string text, bool done, Finish finish) {
  {
    std::lock_guard lock(mutex_);
    unread_ += text;
    for (auto& lp : accepted_logprobs_) unread_logprobs_.push_back(std::move(lp));
    accepted_logprobs_.clear();
    if (done) {
      done_ = true;
      finish_ = finish;
      finished_ = Clock::now();
    }
  }
  cv_.notify_all();
}

Job::Update Job::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return done_ || !unread_.empty(); });
  Update u;
  u.text.swap(unread_);
  u.logprobs.swap(unread_logprobs_);
  u.done = done_;
  u.finish = finish_;
  u.error = error_;
  if (done_) u.completion_tokens = generated_;  // written by the scheduler before publishing done
  return u;
}

double Job::ttft_seconds() const {
  if (generated_ == 0) return 0;
  return std::chrono::duration<double>(first_token_ - created_).count();
}

double Job::decode_tokens_per_second() const {
  if (generated_ < 2) return 0;
  const double s = std::chrono::duration<double>(finished_ - first_token_).count();
  return s > 0 ? (generated_ - 1) / s : 0;
}

}  // namespace ember::server
