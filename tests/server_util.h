// Runs a real `ember serve` on a loopback port for tests, and the small HTTP helpers they share.
#pragma once

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember_binary.h"

namespace ember::test {

// `ember serve --model PACK --port 0 ARGS...` (no --model when PACK is empty); the port is read
// from its first stdout line.
class ServerProcess {
 public:
  ServerProcess(const std::string& pack, const std::vector<std::string>& args) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe");
    log_ = std::string(testing::TempDir()) + "/ember_serve_" + std::to_string(getpid()) + "_" + std::to_string(counter()++) + ".log";
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      FILE* err = std::fopen(log_.c_str(), "w");
      if (err) dup2(fileno(err), 2);
      close(out[0]);
      std::vector<std::string> argv = {ember::test::ember_binary(), "serve", "--port", "0", "--quiet"};
      if (!pack.empty()) argv.insert(argv.begin() + 2, {"--model", pack});
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> c;
      for (auto& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      execv(c[0], c.data());
      _exit(127);
    }
    close(out[1]);
    out_ = fdopen(out[0], "r");
    char line[512] = {};
    if (!std::fgets(line, sizeof line, out_)) throw std::runtime_error("ember serve did not start: " + log());
    std::string s(line);
    auto colon = s.find(':', s.find("127.0.0.1"));
    if (colon == std::string::npos) throw std::runtime_error("unexpected first line: " + s);
    port_ = std::stoi(s.substr(colon + 1));
  }
  // The server's stderr log stays (and its path is printed) only when the test has failed.
  ~ServerProcess() {
    stop();
    if (::testing::Test::HasFailure()) std::fprintf(stderr, "ember serve log kept: %s\n", log_.c_str());
    else std::remove(log_.c_str());
  }

  // SIGTERM and wait; returns the exit status (-1 when killed by a signal).
  int stop(int sig = SIGTERM) {
    if (pid_ <= 0) return status_;
    kill(pid_, sig);
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = 0;
    if (out_) std::fclose(out_);
    out_ = nullptr;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return status_;
  }
  bool alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const {
    std::ifstream f(log_);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  std::unique_ptr<httplib::Client> client(int timeout_s = 60) const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(timeout_s, 0);
    c->set_write_timeout(timeout_s, 0);
    c->set_tcp_nodelay(true);
    return c;
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  pid_t pid_ = 0;
  FILE* out_ = nullptr;
  int port_ = 0, status_ = -1;
  std::string log_;
};

struct HttpReply {
  int status = 0;  // 0 = no response
  std::string body;
  httplib::Headers headers;
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

inline HttpReply post(const ServerProcess& s, const std::string& path, const std::string& body, const httplib::Headers& h = {}) {
  auto c = s.client();
  auto r = c->Post(path.c_str(), h, body, "application/json");
  if (!r) return {};
  return {r->status, r->body, r->headers};
}

inline HttpReply get(const ServerProcess& s, const std::string& path, const httplib::Headers& h = {}) {
  auto c = s.client();
  auto r = c->Get(path.c_str(), h);
  if (!r) return {};
  return {r->status, r->body, r->headers};
}

// The `data:` payloads of a server-sent-event stream, in order ("[DONE]" included).
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    std::string ev = body.substr(pos, end - pos);
    if (ev.rfind("data: ", 0) == 0) out.push_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

// Runs a shell command; its stdout and stderr together.
inline std::pair<int, std::string> run_shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// A value of ember's /metrics text, e.g. `ember_requests_total{route="/v1/completions",status="200"}`.
inline double metric(const std::string& text, const std::string& series) {
  size_t p = text.find("\n" + series + " ");
  if (p == std::string::npos) return 0;
  return std::stod(text.substr(p + series.size() + 2));
}

// A plain TCP connection to 127.0.0.1:port, for what an HTTP client library would not send
// (pipelined requests, chunked or endless bodies, a byte at a time). `source`: the local address
// to connect from (any of 127.0.0.0/8 is this machine), so tests can be several clients.
class RawConnection {
 public:
  RawConnection(int port, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (source) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      inet_pton(AF_INET, source, &local.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
        close_now();
        return;
      }
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close_now();
  }
  ~RawConnection() { close_now(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void close_now() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool send(const std::string& s) {
    size_t done = 0;
    while (fd_ >= 0 && done < s.size()) {
      ssize_t n = ::send(fd_, s.data() + done, s.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return fd_ >= 0;
  }
  // Whether the server has sent something (or closed) within `ms`.
  bool readable(int ms) const {
    pollfd p{fd_, POLLIN, 0};
    return fd_ >= 0 && ::poll(&p, 1, ms) > 0;
  }
  // One response (status line, headers, Content-Length body) within `timeout_ms`, leaving what
  // follows buffered for the next call. Status 0 when none came.
  HttpReply read_response(int timeout_ms = 10000) {
    HttpReply r;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    auto fill = [&] {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0 || !readable(static_cast<int>(left))) return false;
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      buffer_.append(buf, static_cast<size_t>(n));
      return true;
    };
    size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return r;
    const std::string head = buffer_.substr(0, end);
    size_t length = 0;
    for (size_t pos = head.find("\r\n"); pos != std::string::npos && pos < head.size(); pos = head.find("\r\n", pos + 2)) {
      std::string line = head.substr(pos + 2, head.find("\r\n", pos + 2) - pos - 2);
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon), value = line.substr(colon + 2);
      r.headers.emplace(name, value);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == "content-length") length = std::stoul(value);
    }
    while (buffer_.size() < end + 4 + length)
      if (!fill()) return r;
    r.status = std::stoi(head.substr(9, 3));
    r.body = buffer_.substr(end + 4, length);
    buffer_.erase(0, end + 4 + length);
    return r;
  }

 private:
  int fd_ = -1;
  std::string buffer_;
};

// Peak resident memory of a process (VmHWM), in bytes.
inline size_t peak_rss_bytes(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
  return 0;
}

}  // namespace ember::test
