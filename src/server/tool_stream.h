// Splits generated text into content and tool calls as it streams. Text outside
// <|tool_call_start|>...<|tool_call_end|> is content and goes out at once, except a tail that
// could be the start of the marker (held until it is known not to be); from the marker on,
// everything is buffered until the end marker, then parsed: calls when the list is valid, the
// block as it came (markers included) as content when not. The text of a call never reaches
// the content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace ember::server {

class ToolCallStream {
 public:
  // Either content or the calls of one completed block, in the order generated.
  struct Event {
    std::string content;
    std::vector<ToolCall> calls;
  };
  // `max_calls`: calls beyond it are dropped (parallel_tool_calls false: one); 0 keeps all.
  explicit ToolCallStream(size_t max_calls = 0) : max_calls_(max_calls) {}

  std::vector<Event> push(std::string_view text);
  // The end of generation: held text, and an unterminated call block, come out as content.
  std::vector<Event> finish();

  size_t calls() const { return calls_; }
  bool malformed() const { return malformed_; }             // a block was returned as text
  const std::string& error() const { return error_; }       // why the last malformed block failed
  bool inside_call() const { return inside_; }

 private:
  static void content(std::vector<Event>& out, std::string text);
  size_t max_calls_;
  std::string pending_;  // outside: the held tail; inside: the block since the start marker
  bool inside_ = false, malformed_ = false;
  size_t calls_ = 0;
  std::string error_;
};

}  // namespace ember::server
