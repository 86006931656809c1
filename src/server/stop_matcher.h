// Stop strings matched on the decoded text as it streams: text that could still be the start of
// a stop string is held back until it is known not to be; a matched stop string and everything
// after it are dropped (OpenAI's behaviour: the stop sequence is not part of the output).
#pragma once

#include <string>
#include <vector>

namespace ember::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Appends `piece`; returns the text that is now safe to emit. After a match, matched() is true
  // and further pushes return nothing.
  std::string push(const std::string& piece);
  // The held-back rest (no stop string can complete any more).
  std::string finish();
  bool matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool matched_ = false;
};

}  // namespace ember::server
