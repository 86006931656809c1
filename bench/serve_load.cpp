// Load generator for `ember serve`: N requests from C concurrent keep-alive clients, a share of
// them streamed, against a running server. Prints one JSON object: statuses, errors (anything
// but 200 and the designed 503), latency, time to first token, aggregate generated tokens/s,
// and the server's VmRSS before and after when given its pid.
//
//   serve_load --port 8080 --requests 500 --concurrency 32 --stream 0.5 --max-tokens 32 [--pid PID]
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

long vm_rss_kb(long pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  int port = 8080, requests = 500, concurrency = 32, max_tokens = 32;
  double stream_share = 0.5, temperature = 0;
  long pid = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--host") host = v;
    else if (a == "--port") port = std::stoi(v);
    else if (a == "--requests") requests = std::stoi(v);
    else if (a == "--concurrency") concurrency = std::stoi(v);
    else if (a == "--stream") stream_share = std::stod(v);
    else if (a == "--max-tokens") max_tokens = std::stoi(v);
    else if (a == "--temperature") temperature = std::stod(v);
    else if (a == "--pid") pid = std::stol(v);
    else {
      std::fprintf(stderr, "serve_load: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const long rss_before = pid ? vm_rss_kb(pid) : 0;
  std::atomic<int> next{0};
  std::atomic<uint64_t> tokens{0};
  std::mutex m;
  std::map<int, int> statuses;
  std::vector<double> latency, ttft;
  std::string first_error;
  const auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < concurrency; w++)
    workers.emplace_back([&, w] {
      httplib::Client c(host, port);
      c.set_keep_alive(true);
      c.set_tcp_nodelay(true);
      c.set_read_timeout(600, 0);
      for (int i; (i = next.fetch_add(1)) < requests;) {
        const bool stream = (i * 7919 % 100) < stream_share * 100;
        const bool chat = i % 2 == 0;
        json body = {{"max_tokens", max_tokens}, {"temperature", temperature}, {"seed", i}};
        if (chat) body["messages"] = {{{"role", "user"}, {"content", "Request " + std::to_string(i) + ": tell me about load."}}};
        else body["prompt"] = "Request " + std::to_string(i) + " of the load test";
        if (stream) {
          body["stream"] = true;
          body["stream_options"] = {{"include_usage", true}};
        }
        const auto start = Clock::now();
        double first = -1;
        std::string text;
        httplib::Request req;
        req.method = "POST";
        req.path = chat ? "/v1/chat/completions" : "/v1/completions";
        req.body = body.dump();
        req.set_header("Content-Type", "application/json");
        req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
          if (first < 0) first = std::chrono::duration<double>(Clock::now() - start).count();
          text.append(d, n);
          return true;
        };
        httplib::Response res;
        httplib::Error err = httplib::Error::Success;
        const bool sent = c.send(req, res, err);
        const double secs = std::chrono::duration<double>(Clock::now() - start).count();
        int status = sent ? res.status : -1;
        uint64_t n = 0;
        if (status == 200) {
          // The usage object: the body's, or the stream's usage chunk.
          size_t u = text.rfind("\"usage\"");
          if (u != std::string::npos) {
            size_t ct = text.find("\"completion_tokens\":", u);
            if (ct != std::string::npos) n = std::stoull(text.substr(ct + 20));
          }
          if (stream && text.find("data: [DONE]") == std::string::npos) status = -2;  // cut stream
        }
        tokens += n;
        std::lock_guard lock(m);
        statuses[status]++;
        if (status == 200) {
          latency.push_back(secs);
          if (stream) ttft.push_back(first);
        } else if (status != 503 && first_error.empty()) {
          first_error = "status " + std::to_string(status) + " (" + httplib::to_string(err) + "): " + text.substr(0, 300);
        }
      }
      (void)w;
    });
  for (auto& t : workers) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  int errors = 0;
  json st = json::object();
  for (auto [s, n] : statuses) {
    st[std::to_string(s)] = n;
    if (s != 200 && s != 503) errors += n;
  }
  json out = {{"requests", requests},
              {"concurrency", concurrency},
              {"stream_share", stream_share},
              {"max_tokens", max_tokens},
              {"statuses", st},
              {"errors", errors},
              {"first_error", first_error},
              {"wall_s", wall},
              {"completion_tokens", tokens.load()},
              {"aggregate_tokens_per_s", wall > 0 ? tokens.load() / wall : 0},
              {"latency_p50_s", pct(latency, 0.5)},
              {"latency_p95_s", pct(latency, 0.95)},
              {"stream_ttft_p50_s", pct(ttft, 0.5)}};
  if (pid) {
    out["server_vmrss_kb_before"] = rss_before;
    out["server_vmrss_kb_after"] = vm_rss_kb(pid);
  }
  std::printf("%s\n", out.dump(2).c_str());
  return errors == 0 ? 0 : 1;
}
