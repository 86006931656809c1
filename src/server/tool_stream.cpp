#include "server/tool_stream.h"

namespace ember::server {

void ToolCallStream::content(std::vector<Event>& out, std::string text) {
  if (text.empty()) return;
  if (!out.empty() && out.back().calls.empty()) out.back().content += text;
  else out.push_back({std::move(text), {}});
}

std::vector<ToolCallStream::Event> ToolCallStream::push(std::string_view text) {
  std::vector<Event> out;
  pending_ += text;
  while (true) {
    if (!inside_) {
      const size_t start = pending_.find(kToolCallStart);
      if (start == std::string::npos) {
        // Hold the longest tail that is a proper prefix of the start marker.
        size_t keep = std::min(pending_.size(), kToolCallStart.size() - 1);
        while (keep > 0 && std::string_view(pending_).substr(pending_.size() - keep) != kToolCallStart.substr(0, keep)) keep--;
        content(out, pending_.substr(0, pending_.size() - keep));
        pending_.erase(0, pending_.size() - keep);
        return out;
      }
      content(out, pending_.substr(0, start));
      pending_.erase(0, start + kToolCallStart.size());
      inside_ = true;
    }
    const size_t end = pending_.find(kToolCallEnd);
    if (end == std::string::npos) return out;
    const std::string block = pending_.substr(0, end);
    pending_.erase(0, end + kToolCallEnd.size());
    inside_ = false;
    std::string error;
    auto calls = parse_lfm2_calls(block, &error);
    if (calls && max_calls_ && calls_ >= max_calls_) calls->clear();  // all dropped: nothing to emit
    else if (calls && max_calls_ && calls_ + calls->size() > max_calls_) calls->resize(max_calls_ - calls_);
    if (!calls) {
      malformed_ = true;
      error_ = error;
      content(out, std::string(kToolCallStart) + block + std::string(kToolCallEnd));
    } else if (!calls->empty()) {
      calls_ += calls->size();
      out.push_back({"", std::move(*calls)});
    }
  }
}

std::vector<ToolCallStream::Event> ToolCallStream::finish() {
  std::vector<Event> out;
  if (inside_) {
    malformed_ = true;
    error_ = "the call list has no <|tool_call_end|>";
    content(out, std::string(kToolCallStart) + pending_);
  } else {
    content(out, pending_);
  }
  pending_.clear();
  inside_ = false;
  return out;
}

}  // namespace ember::server
