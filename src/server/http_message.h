// HTTP/1.1 messages for ember's own socket layer (http_listener.h): the request a handler sees,
// an incremental request parser that holds at most the header limit plus the body limit of one
// request whatever the framing (Content-Length or chunked), and the response head writer.
//
// The parser is fed whatever bytes arrived; it consumes only the bytes of the current request,
// so pipelined requests stay in the connection's buffer for the next parse, in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ember::server {

// Header names compare case-insensitively (stored lower-case).
using HttpHeaders = std::multimap<std::string, std::string>;

struct HttpRequest {
  std::string method, target, path, version;  // path: target without the query, percent-decoded
  HttpHeaders headers;                        // names lower-case
  std::string body;                           // de-chunked
  std::string header(const std::string& lower_name) const;  // first value, or ""
  bool keep_alive() const;                    // HTTP/1.1 unless "Connection: close"; 1.0 only with keep-alive
};

struct HttpLimits {
  size_t max_header_bytes = 64 * 1024;  // request line + headers (431 beyond)
  size_t max_body_bytes = 1 << 20;      // de-chunked body (413 beyond)
};

class RequestParser {
 public:
  enum class State { NeedMore, Complete, Error };
  explicit RequestParser(const HttpLimits& limits) : limits_(limits) {}

  // Consumes bytes of `in` from the front (only those of this request) and reports progress.
  State feed(std::string& in);
  bool started() const { return stage_ != Stage::Head || !head_.empty(); }
  bool head_done() const { return stage_ != Stage::Head; }
  // The head announced a body the client waits to be invited to send ("Expect: 100-continue").
  bool expects_continue() const { return expect_continue_; }

  HttpRequest take();  // after Complete: the request; the parser is ready for the next one
  int error_status() const { return error_status_; }  // after Error: 400, 413, 431 or 501
  const std::string& error_message() const { return error_message_; }

 private:
  enum class Stage { Head, Body, ChunkSize, ChunkData, ChunkEnd, Trailers, Done };
  State fail(int status, std::string message);
  State parse_head();
  std::optional<State> read_line(std::string& in, std::string& line);

  HttpLimits limits_;
  Stage stage_ = Stage::Head;
  std::string head_, line_;
  HttpRequest req_;
  uint64_t remaining_ = 0;  // body or chunk bytes still to come
  size_t trailer_bytes_ = 0;
  bool expect_continue_ = false;
  int error_status_ = 0;
  std::string error_message_;
};

// "HTTP/1.1 STATUS Reason\r\nName: value\r\n...\r\n".
std::string response_head(int status, const std::vector<std::pair<std::string, std::string>>& headers);
const char* reason_phrase(int status);

}  // namespace ember::server
