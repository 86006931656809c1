// One line on stderr per answered request, for operators and log collectors:
//   text: ember serve: POST /v1/chat/completions 200 prompt_tokens=12 completion_tokens=8 ms=153
//   json: {"time":"2026-01-02T03:04:05Z","method":"POST","path":"/v1/chat/completions","status":200,
//          "prompt_tokens":12,"completion_tokens":8,"ms":153}
// Token counts are those of a generation (0 elsewhere). The path is the request's, without the
// query string; control characters in it are escaped so a line stays one line.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

namespace ember::server {

enum class LogFormat { Off, Text, Json };
// "text", "json" or "off"; throws ember::Error naming --log-format otherwise.
LogFormat parse_log_format(const std::string& name);

struct RequestRecord {
  std::string method, path;
  int status = 0;
  uint32_t prompt_tokens = 0, completion_tokens = 0;
  double ms = 0;
};

std::string format_request_line(const RequestRecord& r, LogFormat format);

// The handler that generates reports its token counts here; the server reads them back when it
// writes the line. Per thread: a worker runs one request from start to end.
void note_request_tokens(uint32_t prompt_tokens, uint32_t completion_tokens);
// Returns the counts noted on this thread since the last take, and clears them.
std::pair<uint32_t, uint32_t> take_request_tokens();

class RequestLog {
 public:
  explicit RequestLog(LogFormat format) : format_(format) {}
  bool enabled() const { return format_ != LogFormat::Off; }
  void write(const RequestRecord& r);  // one write of the whole line, lines never interleave

 private:
  LogFormat format_;
  std::mutex mutex_;
};

}  // namespace ember::server
