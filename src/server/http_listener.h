// The socket layer of `ember serve`: an exclusive listening socket, one poll thread that
// accepts connections and reads requests, and a pool of workers that run handlers.
//
// Why not a thread per connection: a client that sends a byte a second would hold a worker for
// as long as it likes, and enough of them lock everyone else out. Here requests are read by the
// poll thread under deadlines (head, body, idle keep-alive) and limits (head and body bytes,
// whatever the framing); a worker sees only complete requests. Connections per client address
// and in total are capped; refusals, timeouts and resets are reported through `on_event`.
// Requests pipelined on one connection are answered in order: the next is parsed from the
// connection's buffer only after the previous response was written.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/http_message.h"

namespace ember::server {

struct ListenerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port
  HttpLimits limits;
  int workers = 32;
  int backlog = 1024;                 // the kernel caps it at net.core.somaxconn
  size_t max_connections = 1024;      // open connections in all (lowered to fit the open-file limit)
  size_t max_per_client = 128;        // open connections from one client address (0 = no cap)
  std::chrono::milliseconds head_timeout{10000};  // first byte of a request to the end of its head
  std::chrono::milliseconds body_timeout{60000};  // end of the head to the end of the body
  std::chrono::milliseconds idle_timeout{30000};  // keep-alive connection with no request
  std::chrono::milliseconds write_timeout{60000}; // one write of a response making no progress
};

// What the listener counts; the server turns these into metrics.
enum class ListenerEvent { Accepted, RejectedPerClient, RejectedCapacity, TimedOut, Reset };

// A handler's way to answer its request. Every method returns false once the client is gone.
class HttpResponder {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;
  HttpResponder(int fd, bool keep_alive, std::chrono::milliseconds write_timeout)
      : fd_(fd), keep_alive_(keep_alive), write_timeout_(write_timeout) {}

  // Headers every response of this request carries (CORS), set before it is answered.
  void add_header(std::string name, std::string value) { common_.emplace_back(std::move(name), std::move(value)); }
  bool send(int status, const std::string& content_type, const std::string& body, Headers extra = {});
  // A streamed response (chunked): begin, any number of writes, end.
  bool begin_stream(int status, const std::string& content_type, Headers extra = {});
  bool write(const std::string& data);
  bool end_stream();
  // The client closed its side of the connection (non-blocking; pipelined bytes do not count).
  bool client_gone() const;
  // The client left before the answer: nothing more is written and the connection closes
  // (status 499 in the metrics unless a response had begun).
  void abandon() {
    failed_ = true;
    if (!status_) status_ = 499;
  }

  bool started() const { return status_ != 0; }
  int status() const { return status_; }
  bool keep_alive() const { return keep_alive_ && !failed_; }

 private:
  bool write_all(const std::string& bytes);
  std::string head(int status, const std::string& content_type, Headers extra, const std::string& framing);
  int fd_;
  bool keep_alive_, failed_ = false;
  std::chrono::milliseconds write_timeout_;
  int status_ = 0;
  Headers common_;
};

class HttpListener {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpResponder&)>;
  // A request the listener refuses itself (malformed, too large, too slow): the response body.
  using ErrorBody = std::function<std::string(int status, const std::string& message, const std::string& path)>;

  HttpListener(ListenerOptions options, Handler handler, ErrorBody error_body, std::function<void(ListenerEvent)> on_event);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Binds and listens; returns the port bound. Throws ember::Error naming the address when it cannot.
  int bind();
  // Serves until stop(); returns after every worker has finished its request.
  void run();
  void stop();
  size_t open_connections() const { return open_.load(); }

 private:
  struct Connection;
  struct Task;
  void poll_loop();
  void worker_loop();
  void accept_all();
  void read_from(Connection& c);
  // Parses what `c` has buffered: dispatches a complete request, refuses a bad one.
  void advance(std::unique_ptr<Connection>& c);
  void refuse(Connection& c, int status, const std::string& message);
  void close_connection(std::unique_ptr<Connection>& c);
  void wake();

  ListenerOptions options_;
  Handler handler_;
  ErrorBody error_body_;
  std::function<void(ListenerEvent)> on_event_;
  int listen_fd_ = -1, wake_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_{0};

  std::vector<std::unique_ptr<Connection>> polled_;  // poll thread only
  std::map<std::string, size_t> per_client_;         // poll thread only

  std::mutex mutex_;  // guards tasks_, returned_
  std::condition_variable work_cv_;
  std::deque<std::unique_ptr<Task>> tasks_;
  std::vector<std::unique_ptr<Connection>> returned_;  // answered connections back to the poll thread
  std::vector<std::thread> workers_;
};

}  // namespace ember::server
