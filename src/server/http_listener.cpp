#include "server/http_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace ember::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kReadChunk = 64 * 1024;
constexpr auto kDrainTime = std::chrono::seconds(2);  // reading (and dropping) a refused body so the client sees the answer

std::string peer_address(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
  else if (a.ss_family == AF_INET6) inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof buf);
  return buf;
}

int poll_ms(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
}

}  // namespace

struct HttpListener::Connection {
  Connection(int fd_, std::string peer_, const HttpLimits& limits) : fd(fd_), peer(std::move(peer_)), parser(limits) {}
  enum class Phase { Idle, Head, Body, Draining };
  int fd;
  std::string peer, in;
  RequestParser parser;
  Phase phase = Phase::Idle;
  Clock::time_point deadline;
  bool continue_sent = false, close = false, eof = false;
  bool counted = true;  // in per_client_ (a refused connection is not)
};

struct HttpListener::Task {
  std::unique_ptr<Connection> conn;
  HttpRequest request;
};

// ---- responder ----

bool HttpResponder::write_all(const std::string& bytes) {
  if (failed_) return false;
  size_t done = 0;
  auto deadline = Clock::now() + write_timeout_;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      deadline = Clock::now() + write_timeout_;  // a slow reader is fine while it makes progress
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && Clock::now() < deadline) {
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, poll_ms(deadline));
      continue;
    }
    failed_ = true;
    return false;
  }
  return true;
}

std::string HttpResponder::head(int status, const std::string& content_type, Headers extra, const std::string& framing) {
  status_ = status;
  extra.insert(extra.end(), common_.begin(), common_.end());
  if (status != 204) {  // a 204 has no body, so neither its type nor its length (RFC 9110)
    extra.insert(extra.begin(), {"Content-Type", content_type});
    extra.emplace_back(framing.empty() ? "Transfer-Encoding" : "Content-Length", framing.empty() ? "chunked" : framing);
  }
  extra.emplace_back("Connection", keep_alive_ ? "keep-alive" : "close");
  return response_head(status, extra);
}

bool HttpResponder::send(int status, const std::string& content_type, const std::string& body, Headers extra) {
  return write_all(head(status, content_type, std::move(extra), std::to_string(body.size())) + body);
}

bool HttpResponder::begin_stream(int status, const std::string& content_type, Headers extra) {
  return write_all(head(status, content_type, std::move(extra), ""));
}

bool HttpResponder::write(const std::string& data) {
  if (data.empty()) return !failed_;
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return write_all(size + data + "\r\n");
}

bool HttpResponder::end_stream() { return write_all("0\r\n\r\n"); }

bool HttpResponder::client_gone() const {
  if (failed_) return true;
  pollfd p{fd_, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

// ---- listener ----

HttpListener::HttpListener(ListenerOptions options, Handler handler, ErrorBody error_body, std::function<void(ListenerEvent)> on_event)
    : options_(std::move(options)), handler_(std::move(handler)), error_body_(std::move(error_body)), on_event_(std::move(on_event)) {
  if (::pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe: ") + strerror(errno), "ember serve");
  // Each connection is a file descriptor: take the hard limit, and keep the cap below it.
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
    getrlimit(RLIMIT_NOFILE, &r);
    if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur > 128)
      options_.max_connections = std::min<size_t>(options_.max_connections, static_cast<size_t>(r.rlim_cur) - 96);
  }
}

HttpListener::~HttpListener() {
  for (auto& c : polled_) ::close(c->fd);
  for (auto& c : returned_) ::close(c->fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

int HttpListener::bind() {
  const std::string where = "--host " + options_.host + " --port " + std::to_string(options_.port);
  if (options_.port < 0 || options_.port > 65535)
    throw Error("port " + std::to_string(options_.port) + " is out of range", where, "give a port from 1 to 65535, or 0 for any free port");
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  if (int e = getaddrinfo(options_.host.c_str(), std::to_string(options_.port).c_str(), &hints, &res); e != 0)
    throw Error(std::string("cannot resolve the address: ") + gai_strerror(e), where, "give an address of this machine, e.g. 127.0.0.1");
  std::string why;
  for (addrinfo* a = res; a && listen_fd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR lets a restarted server bind while old connections linger in TIME_WAIT; on
    // Linux it never lets a second socket listen on a port in use. SO_REUSEPORT would, so it is
    // not set: a second server on a busy port fails here.
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, options_.backlog) != 0) {
      why = errno == EADDRINUSE ? "the port is already in use (another server?)" : strerror(errno);
      ::close(fd);
      continue;
    }
    listen_fd_ = fd;
  }
  freeaddrinfo(res);
  if (listen_fd_ < 0) throw Error("cannot listen: " + why, where, "stop the other server or pick another port (--port 0 picks a free one)");
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port : reinterpret_cast<sockaddr_in&>(bound).sin_port);
}

void HttpListener::wake() {
  char b = 1;
  [[maybe_unused]] auto n = ::write(wake_[1], &b, 1);
}

void HttpListener::stop() {
  stopping_ = true;
  work_cv_.notify_all();
  wake();
}

void HttpListener::run() {
  for (int i = 0; i < std::max(1, options_.workers); i++) workers_.emplace_back([this] { worker_loop(); });
  poll_loop();
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
  std::lock_guard lock(mutex_);
  for (auto& c : returned_) close_connection(c);
  returned_.clear();
}

void HttpListener::worker_loop() {
  while (true) {
    std::unique_ptr<Task> task;
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    Connection& c = *task->conn;
    HttpResponder r(c.fd, task->request.keep_alive() && !stopping_, options_.write_timeout);
    try {
      handler_(task->request, r);
    } catch (const std::exception& e) {
      if (!r.started()) r.send(500, "application/json", error_body_(500, std::string("internal error: ") + e.what(), task->request.path));
    }
    if (!r.started()) r.send(500, "application/json", error_body_(500, "internal error: no response", task->request.path));
    c.close = !r.keep_alive();
    {
      std::lock_guard lock(mutex_);
      returned_.push_back(std::move(task->conn));
    }
    wake();
  }
}

void HttpListener::close_connection(std::unique_ptr<Connection>& c) {
  if (!c) return;
  ::close(c->fd);
  auto it = c->counted ? per_client_.find(c->peer) : per_client_.end();
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
  open_--;
  c.reset();
}

void HttpListener::accept_all() {
  while (true) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a connection gone before it was accepted
    on_event_(ListenerEvent::Accepted);
    std::string peer = peer_address(addr);
    const bool full = open_.load() >= options_.max_connections;
    const bool greedy = options_.max_per_client > 0 && per_client_[peer] >= options_.max_per_client;
    if (full || greedy) {
      // Answered, not dropped: the client learns why, and the refusal is counted.
      on_event_(full ? ListenerEvent::RejectedCapacity : ListenerEvent::RejectedPerClient);
      if (per_client_[peer] == 0) per_client_.erase(peer);
      auto c = std::make_unique<Connection>(fd, std::move(peer), options_.limits);
      c->counted = false;
      open_++;
      refuse(*c, 503, full ? "the server has too many open connections" : "too many open connections from your address");
      // Past the hard limit even the refusal's lingering close is skipped.
      if (open_.load() > options_.max_connections + 256) close_connection(c);
      else polled_.push_back(std::move(c));
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // headers and body leave without Nagle's delay
    per_client_[peer]++;
    open_++;
    auto c = std::make_unique<Connection>(fd, std::move(peer), options_.limits);
    c->deadline = Clock::now() + options_.idle_timeout;
    polled_.push_back(std::move(c));
  }
}

void HttpListener::refuse(Connection& c, int status, const std::string& message) {
  // The poll thread never waits on a client: what does not fit the socket buffer now is dropped.
  HttpResponder r(c.fd, false, std::chrono::milliseconds(0));
  HttpResponder::Headers extra;
  if (status == 503) extra.emplace_back("Retry-After", "1");
  r.send(status, "application/json", error_body_(status, message, ""), extra);
  // Lingering close: read and drop what the client still sends for a moment, so that closing does
  // not reset the connection before the client has read the answer.
  ::shutdown(c.fd, SHUT_WR);
  c.phase = Connection::Phase::Draining;
  c.in.clear();
  c.deadline = Clock::now() + kDrainTime;
}

void HttpListener::read_from(Connection& c) {
  char buf[kReadChunk];
  // One chunk per wakeup at most for a request in progress: the parser then decides (a refused
  // body is not read on, and every connection gets its turn).
  for (int i = 0; i < 4; i++) {
    ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      if (c.phase != Connection::Phase::Draining) c.in.append(buf, static_cast<size_t>(n));
      if (c.phase != Connection::Phase::Draining) return;
      continue;
    }
    if (n == 0) {
      c.eof = true;
      return;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) c.eof = true;  // reset: counted by advance() if mid-request
    return;
  }
}

void HttpListener::advance(std::unique_ptr<Connection>& c) {
  if (c->phase == Connection::Phase::Draining) {
    if (c->eof || Clock::now() >= c->deadline) close_connection(c);
    return;
  }
  const auto before = c->phase;
  RequestParser::State s = c->in.empty() ? RequestParser::State::NeedMore : c->parser.feed(c->in);
  if (s == RequestParser::State::Error) return refuse(*c, c->parser.error_status(), c->parser.error_message());
  if (s == RequestParser::State::Complete) {
    auto task = std::make_unique<Task>();
    task->request = c->parser.take();
    c->phase = Connection::Phase::Idle;
    c->continue_sent = false;
    task->conn = std::move(c);
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    work_cv_.notify_one();
    return;
  }
  if (c->eof) {  // gone mid-request (or idle): nothing to answer
    if (c->parser.started()) on_event_(ListenerEvent::Reset);
    return close_connection(c);
  }
  // Deadlines run from the first byte of a request, and again from the end of its head.
  if (c->parser.head_done()) c->phase = Connection::Phase::Body;
  else if (c->parser.started()) c->phase = Connection::Phase::Head;
  if (c->phase != before) c->deadline = Clock::now() + (c->phase == Connection::Phase::Body ? options_.body_timeout : options_.head_timeout);
  if (c->phase == Connection::Phase::Body && c->parser.expects_continue() && !c->continue_sent) {
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    [[maybe_unused]] auto n = ::send(c->fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    c->continue_sent = true;
  }
  if (Clock::now() >= c->deadline) {
    if (c->phase == Connection::Phase::Idle) return close_connection(c);
    on_event_(ListenerEvent::TimedOut);
    refuse(*c, 408, c->phase == Connection::Phase::Head ? "the request head did not arrive in time" : "the request body did not arrive in time");
  }
}

void HttpListener::poll_loop() {
  std::vector<pollfd> fds;
  while (!stopping_) {
    fds.clear();
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    auto next = Clock::now() + std::chrono::seconds(1);
    for (auto& c : polled_) {
      fds.push_back({c->fd, POLLIN | POLLRDHUP, 0});
      next = std::min(next, c->deadline);
    }
    ::poll(fds.data(), fds.size(), poll_ms(next));
    if (stopping_) break;

    if (fds[0].revents) {
      char buf[256];
      while (::read(wake_[0], buf, sizeof buf) > 0) {
      }
    }
    // Polled connections first (their indices match fds), then the newly accepted and returned.
    for (size_t i = 0; i < polled_.size(); i++) {
      auto& c = polled_[i];
      if (fds[i + 2].revents) read_from(*c);
      advance(c);
    }
    std::vector<std::unique_ptr<Connection>> back;
    {
      std::lock_guard lock(mutex_);
      back.swap(returned_);
    }
    for (auto& c : back) {
      if (c->close) {
        close_connection(c);
        continue;
      }
      c->deadline = Clock::now() + options_.idle_timeout;
      advance(c);  // a pipelined request may be buffered already
      if (c) polled_.push_back(std::move(c));
    }
    if (fds[1].revents) accept_all();
    std::erase_if(polled_, [](const auto& c) { return !c; });
  }
  ::close(listen_fd_);
  listen_fd_ = -1;
  for (auto& c : polled_) close_connection(c);
  polled_.clear();
}

}  // namespace ember::server
