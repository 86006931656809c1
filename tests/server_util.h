// Runs a real `ember serve` on a loopback port for tests, and the small HTTP helpers they share.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
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

// `ember serve --model PACK --port 0 ARGS...`; the port is read from its first stdout line.
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
      std::vector<std::string> argv = {ember::test::ember_binary(), "serve", "--model", pack, "--port", "0", "--quiet"};
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

}  // namespace ember::test
