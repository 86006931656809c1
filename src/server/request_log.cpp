#include "server/request_log.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace ember::server {
namespace {

thread_local uint32_t t_prompt = 0, t_completion = 0;

// Keeps a line one line: control bytes and spaces (the text format's separator) as %XX, the way
// they would appear in a URL anyway.
std::string safe_path(const std::string& p) {
  std::string out;
  for (unsigned char c : p) {
    if (c <= 0x20 || c == 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out;
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

LogFormat parse_log_format(const std::string& name) {
  if (name == "text") return LogFormat::Text;
  if (name == "json") return LogFormat::Json;
  if (name == "off") return LogFormat::Off;
  throw Error("unknown log format '" + name + "'", "--log-format", "use text, json or off");
}

std::string format_request_line(const RequestRecord& r, LogFormat format) {
  const long long ms = static_cast<long long>(r.ms + 0.5);
  if (format == LogFormat::Json) {
    nlohmann::json j = {{"time", utc_now()}, {"method", r.method}, {"path", r.path}, {"status", r.status},
                        {"prompt_tokens", r.prompt_tokens}, {"completion_tokens", r.completion_tokens}, {"ms", ms}};
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return "ember serve: " + safe_path(r.method) + " " + safe_path(r.path) + " " + std::to_string(r.status) +
         " prompt_tokens=" + std::to_string(r.prompt_tokens) + " completion_tokens=" + std::to_string(r.completion_tokens) +
         " ms=" + std::to_string(ms) + "\n";
}

void note_request_tokens(uint32_t prompt_tokens, uint32_t completion_tokens) {
  t_prompt = prompt_tokens;
  t_completion = completion_tokens;
}

std::pair<uint32_t, uint32_t> take_request_tokens() {
  std::pair<uint32_t, uint32_t> r{t_prompt, t_completion};
  t_prompt = t_completion = 0;
  return r;
}

void RequestLog::write(const RequestRecord& r) {
  if (!enabled()) return;
  const std::string line = format_request_line(r, format_);
  std::lock_guard lock(mutex_);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace ember::server
