// Beyond one process: two `ember serve` behind nginx on loopback (the configuration of
// docs/serve-nginx.conf with test ports), and a small load run with memory before and after.
// The full load test (500 requests, 32 concurrent) is bench/serve_load.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>

#include "lfm2_test_pack.h"
#include "server_util.h"

using namespace ember;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

int free_port() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

// docs/serve-nginx.conf with the test's ports, a pid file and logs in `dir`, in the foreground.
std::string nginx_config(const fs::path& dir, int listen, int a, int b) {
  std::ifstream f(fs::path(EMBER_SOURCE_DIR) / "docs/serve-nginx.conf");
  std::string conf(std::istreambuf_iterator<char>(f), {});
  conf = std::regex_replace(conf, std::regex("127\\.0\\.0\\.1:8080"), "127.0.0.1:" + std::to_string(listen));
  conf = std::regex_replace(conf, std::regex("127\\.0\\.0\\.1:8081"), "127.0.0.1:" + std::to_string(a));
  conf = std::regex_replace(conf, std::regex("127\\.0\\.0\\.1:8082"), "127.0.0.1:" + std::to_string(b));
  const std::string d = dir.string();
  std::string head = "daemon off;\npid " + d + "/nginx.pid;\nerror_log " + d + "/error.log;\n";
  std::string paths = "  access_log " + d + "/access.log;\n  client_body_temp_path " + d + "/body;\n  proxy_temp_path " + d +
                      "/proxy;\n  fastcgi_temp_path " + d + "/fcgi;\n  uwsgi_temp_path " + d + "/uwsgi;\n  scgi_temp_path " + d + "/scgi;\n";
  conf = std::regex_replace(conf, std::regex("http \\{\n"), "http {\n" + paths);
  return head + conf;
}

}  // namespace

TEST(ServerCluster, TwoServersBehindNginxShareTheRequests) {
  if (std::system("command -v nginx >/dev/null 2>&1") != 0) GTEST_SKIP() << "nginx is not installed (apt-get install nginx-light)";
  const std::string pack = test::lfm2_test_pack("tiny").string();
  test::ServerProcess a(pack, {"--parallel", "2"}), b(pack, {"--parallel", "2"});
  fs::path dir = fs::temp_directory_path() / ("ember_nginx_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // chmod so nginx's unprivileged workers may use the temp paths when the tests run as root.
  fs::permissions(dir, fs::perms::all);
  const int port = free_port();
  std::ofstream(dir / "nginx.conf") << nginx_config(dir, port, a.port(), b.port());
  pid_t nginx = fork();
  if (nginx == 0) {
    execlp("nginx", "nginx", "-p", dir.c_str(), "-e", (dir / "error.log").c_str(), "-c", (dir / "nginx.conf").c_str(), nullptr);
    _exit(127);
  }
  httplib::Client c("127.0.0.1", port);
  c.set_tcp_nodelay(true);
  c.set_read_timeout(60, 0);
  bool up = false;
  for (int i = 0; i < 200 && !up; i++) {
    auto r = c.Get("/health");
    up = r && r->status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(up) << "nginx did not come up";
  const int n = 16;
  int ok = 0, streamed_ok = 0;
  for (int i = 0; i < n; i++) {
    json body = {{"prompt", "request " + std::to_string(i)}, {"max_tokens", 4}, {"temperature", 0}};
    if (i % 4 == 3) body["stream"] = true;
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    if (r && r->status == 200) {
      ok++;
      if (i % 4 == 3 && r->body.find("data: [DONE]") != std::string::npos) streamed_ok++;
    }
  }
  EXPECT_EQ(ok, n);
  EXPECT_EQ(streamed_ok, n / 4);
  const std::string series = "ember_requests_total{route=\"/v1/completions\",status=\"200\"}";
  // httplib's logger counts a request after its response went out: the last one may show up a
  // moment after the client has its answer.
  double ca = 0, cb = 0;
  for (int i = 0; i < 100 && ca + cb < n; i++) {
    if (i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ca = test::metric(test::get(a, "/metrics").body, series);
    cb = test::metric(test::get(b, "/metrics").body, series);
  }
  EXPECT_GT(ca, 0) << "server A got no requests";
  EXPECT_GT(cb, 0) << "server B got no requests";
  EXPECT_EQ(ca + cb, n);
  kill(nginx, SIGTERM);
  waitpid(nginx, nullptr, 0);
  fs::remove_all(dir);
}

TEST(ServerCluster, SmallLoadRunHasNoErrorsAndFlatMemory) {
  // 96 requests from 12 concurrent clients over 4 slots and a 4-place queue: the designed 503s
  // happen (the client retries them); nothing else may fail. Memory is read before (after a warm-up) and after.
  const std::string pack = test::lfm2_test_pack("tiny").string();
  test::ServerProcess s(pack, {"--parallel", "4", "--queue", "4"});
  for (int i = 0; i < 8; i++) test::post(s, "/v1/completions", json{{"prompt", "warm"}, {"max_tokens", 8}, {"stream", i % 2 == 0}}.dump());
  const std::string status = "/proc/" + std::to_string(s.pid()) + "/status";
  auto rss = [&] {
    std::ifstream f(status);
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return 0L;
  };
  const long before = rss();
  std::atomic<int> next{0}, ok{0}, busy{0}, errors{0};
  std::mutex m;
  std::string first_error;
  std::vector<std::thread> clients;
  for (int t = 0; t < 12; t++)
    clients.emplace_back([&] {
      auto c = s.client();
      c->set_keep_alive(true);
      for (int i; (i = next++) < 96;) {
        json body = {{"max_tokens", 4 + i % 9}, {"temperature", 0.7}, {"seed", i}, {"stream", i % 2 == 1}};
        if (i % 3) body["messages"] = {{{"role", "user"}, {"content", "load " + std::to_string(i)}}};
        else body["prompt"] = "load " + std::to_string(i);
        auto send = [&] { return c->Post(i % 3 ? "/v1/chat/completions" : "/v1/completions", body.dump(), "application/json"); };
        auto r = send();
        // A real client retries a 503 after a pause, up to its deadline (generous: on a loaded
        // 2-core machine a client can lose the race for a free place for several seconds).
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (r && r->status == 503 && r->has_header("Retry-After") && std::chrono::steady_clock::now() < deadline) {
          busy++;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          r = send();
        }
        const bool good = r && r->status == 200 && (!(i % 2) || r->body.find("data: [DONE]") != std::string::npos);
        if (good) ok++;
        else {
          errors++;
          std::lock_guard lock(m);
          if (first_error.empty()) first_error = r ? std::to_string(r->status) + " " + r->body : "no response";
        }
      }
    });
  for (auto& c : clients) c.join();
  const long after = rss();
  EXPECT_EQ(errors.load(), 0) << first_error;
  EXPECT_EQ(ok.load(), 96);
  std::printf("[ load ] 96 requests, 12 clients: %d ok, %d designed 503; server VmRSS %ld kB before, %ld kB after\n", ok.load(), busy.load(),
              before, after);
  EXPECT_LT(after - before, 64 * 1024) << "server memory grew by more than 64 MiB";
  EXPECT_EQ(s.stop(), 0) << s.log();
}
