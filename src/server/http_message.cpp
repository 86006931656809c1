#include "server/http_message.h"

#include <algorithm>
#include <cctype>

namespace ember::server {
namespace {

constexpr size_t kMaxLine = 4096;  // a chunk-size or trailer line

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    int hi, lo;
    if (s[i] == '%' && i + 2 < s.size() && (hi = hex_value(s[i + 1])) >= 0 && (lo = hex_value(s[i + 2])) >= 0) {
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A decimal Content-Length: digits only (no sign, no spaces inside), at most 19 of them.
std::optional<uint64_t> parse_length(const std::string& v) {
  if (v.empty() || v.size() > 19 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return std::stoull(v);
}

}  // namespace

std::string HttpRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

bool HttpRequest::keep_alive() const {
  const std::string c = lower(header("connection"));
  if (c.find("close") != std::string::npos) return false;
  return version == "HTTP/1.1" || c.find("keep-alive") != std::string::npos;
}

RequestParser::State RequestParser::fail(int status, std::string message) {
  stage_ = Stage::Done;
  error_status_ = status;
  error_message_ = std::move(message);
  return State::Error;
}

std::optional<RequestParser::State> RequestParser::read_line(std::string& in, std::string& line) {
  const size_t nl = in.find('\n');
  const size_t take = nl == std::string::npos ? in.size() : nl;
  if (line_.size() + take > kMaxLine) return fail(400, "a chunk-size or trailer line is too long");
  line_.append(in, 0, take);
  in.erase(0, nl == std::string::npos ? in.size() : nl + 1);
  if (nl == std::string::npos) return State::NeedMore;
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  line = std::move(line_);
  line_.clear();
  return std::nullopt;
}

RequestParser::State RequestParser::parse_head() {
  size_t pos = 0;
  auto next_line = [&](std::string& line) {
    size_t nl = head_.find('\n', pos);
    if (nl == std::string::npos) nl = head_.size();
    line = head_.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    pos = nl + 1;
  };
  std::string line;
  next_line(line);
  const size_t s1 = line.find(' '), s2 = line.rfind(' ');
  if (s1 == std::string::npos || s2 == s1) return fail(400, "malformed request line");
  req_.method = line.substr(0, s1);
  req_.target = line.substr(s1 + 1, s2 - s1 - 1);
  req_.version = line.substr(s2 + 1);
  if (req_.version != "HTTP/1.1" && req_.version != "HTTP/1.0") return fail(400, "unsupported HTTP version '" + req_.version + "'");
  if (req_.method.empty() || req_.target.empty() || req_.target.find(' ') != std::string::npos) return fail(400, "malformed request line");
  req_.path = percent_decode(req_.target.substr(0, req_.target.find('?')));
  while (pos < head_.size()) {
    next_line(line);
    if (line.empty()) continue;
    if (line[0] == ' ' || line[0] == '\t') return fail(400, "folded header lines are not accepted");
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0) return fail(400, "malformed header line");
    const std::string name = lower(line.substr(0, colon));
    if (name.find_first_of(" \t") != std::string::npos) return fail(400, "malformed header name");
    req_.headers.emplace(name, trim(line.substr(colon + 1)));
  }

  // Framing: exactly one of Content-Length and chunked; a message with both could be read two
  // ways by two parsers (a proxy and us), so it is refused.
  const bool has_length = req_.headers.count("content-length") > 0;
  const std::string te = lower(req_.header("transfer-encoding"));
  if (req_.headers.count("transfer-encoding")) {
    if (has_length) return fail(400, "both Content-Length and Transfer-Encoding");
    if (te != "chunked") return fail(501, "unsupported Transfer-Encoding '" + te + "' (only chunked)");
    stage_ = Stage::ChunkSize;
  } else if (has_length) {
    std::optional<uint64_t> n;
    for (auto [it, end] = req_.headers.equal_range("content-length"); it != end; ++it) {
      auto v = parse_length(it->second);
      if (!v || (n && *n != *v)) return fail(400, "invalid Content-Length '" + it->second + "'");
      n = v;
    }
    if (*n > limits_.max_body_bytes) return fail(413, "the request body is larger than the server's limit");
    remaining_ = *n;
    stage_ = Stage::Body;
  } else {
    remaining_ = 0;
    stage_ = Stage::Body;
  }
  expect_continue_ = lower(req_.header("expect")) == "100-continue";
  return State::NeedMore;
}

RequestParser::State RequestParser::feed(std::string& in) {
  while (true) {
    switch (stage_) {
      case Stage::Head: {
        // Empty lines before a request line are allowed (some clients send CRLF after a body).
        if (head_.empty()) {
          size_t skip = 0;
          while (skip < in.size() && (in[skip] == '\r' || in[skip] == '\n')) skip++;
          in.erase(0, skip);
        }
        const size_t old = head_.size();
        head_ += in;
        in.clear();
        size_t end = head_.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
        size_t term = 4;
        if (end == std::string::npos) {
          end = head_.find("\n\n", old >= 1 ? old - 1 : 0);
          term = 2;
        }
        if (end == std::string::npos) {
          if (head_.size() > limits_.max_header_bytes) return fail(431, "the request head is larger than the server's limit");
          return State::NeedMore;
        }
        if (end > limits_.max_header_bytes) return fail(431, "the request head is larger than the server's limit");
        in = head_.substr(end + term);
        head_.resize(end);
        if (State s = parse_head(); s == State::Error) return s;
        break;
      }
      case Stage::Body: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size()));
        req_.body.append(in, 0, n);
        in.erase(0, n);
        remaining_ -= n;
        if (remaining_ > 0) return State::NeedMore;
        stage_ = Stage::Done;
        return State::Complete;
      }
      case Stage::ChunkSize: {
        std::string line;
        if (auto s = read_line(in, line)) return *s;
        const std::string size = trim(line.substr(0, line.find(';')));
        if (size.empty() || size.size() > 15) return fail(400, "invalid chunk size '" + size + "'");
        uint64_t v = 0;
        for (char c : size) {
          int h = hex_value(c);
          if (h < 0) return fail(400, "invalid chunk size '" + size + "'");
          v = v * 16 + static_cast<uint64_t>(h);
        }
        if (req_.body.size() + v > limits_.max_body_bytes) return fail(413, "the request body is larger than the server's limit");
        remaining_ = v;
        stage_ = v == 0 ? Stage::Trailers : Stage::ChunkData;
        break;
      }
      case Stage::ChunkData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size()));
        req_.body.append(in, 0, n);
        in.erase(0, n);
        remaining_ -= n;
        if (remaining_ > 0) return State::NeedMore;
        stage_ = Stage::ChunkEnd;
        break;
      }
      case Stage::ChunkEnd: {
        std::string line;
        if (auto s = read_line(in, line)) return *s;
        if (!line.empty()) return fail(400, "chunk data is longer than its size");
        stage_ = Stage::ChunkSize;
        break;
      }
      case Stage::Trailers: {
        std::string line;
        if (auto s = read_line(in, line)) return *s;
        trailer_bytes_ += line.size() + 2;
        if (trailer_bytes_ > limits_.max_header_bytes) return fail(431, "the request trailers are larger than the server's limit");
        if (!line.empty()) break;  // trailers are read and ignored
        stage_ = Stage::Done;
        return State::Complete;
      }
      case Stage::Done:
        return error_status_ ? State::Error : State::Complete;
    }
  }
}

HttpRequest RequestParser::take() {
  HttpRequest r = std::move(req_);
  *this = RequestParser(limits_);
  return r;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

std::string response_head(int status, const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  for (const auto& [k, v] : headers) h += k + ": " + v + "\r\n";
  return h + "\r\n";
}

}  // namespace ember::server
