// `ember serve` against hostile clients, on loopback only: bodies over --max-body (chunked or
// not) refused while reading with the server's memory measured, bad framing, a second server on
// a busy port, a burst of connections, slow clients that must not starve a normal one, a
// non-streaming client that hangs up, pipelined requests, read deadlines.
#include <gtest/gtest.h>

#include <thread>

#include "lfm2_test_pack.h"
#include "server_util.h"

using namespace ember;
using json = nlohmann::json;

namespace {

const std::string& pack() {
  static std::string p = test::lfm2_test_pack("tiny").string();
  return p;
}

test::ServerProcess& server() {
  static test::ServerProcess s(pack(), {"--max-body", "65536", "--max-client-connections", "100", "--header-timeout", "1"});
  return s;
}

std::string metrics() { return test::get(server(), "/metrics").body; }

std::string chat_json() {
  return json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}, {"temperature", 0}}.dump();
}

std::string post_head(const std::string& framing) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + framing + "\r\n";
}

std::string chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

// Streams `total` bytes of chunked body (or of a body announced by Content-Length) until the
// server answers; returns the answer and how much of the body went out.
std::pair<test::HttpReply, size_t> push_body(test::RawConnection& c, size_t total, bool chunked) {
  const std::string piece(64 * 1024, 'x');
  size_t sent = 0;
  while (sent < total && !c.readable(0)) {
    if (!c.send(chunked ? chunk(piece) : piece)) break;
    sent += piece.size();
  }
  return {c.read_response(10000), sent};
}

}  // namespace

TEST(ServerHostile, ChunkedBodyOverTheLimitIsRefusedWhileReadingInBoundedMemory) {
  auto& s = server();
  // A chunked body under the limit is a request like any other.
  {
    test::RawConnection c(s.port());
    const std::string body = chat_json();
    ASSERT_TRUE(c.send(post_head("Transfer-Encoding: chunked\r\n") + chunk(body.substr(0, 7)) + chunk(body.substr(7)) + "0\r\n\r\n"));
    auto r = c.read_response(60000);
    EXPECT_EQ(r.status, 200) << r.body;
  }
  const size_t before = test::peak_rss_bytes(s.pid());
  ASSERT_GT(before, 0u);
  const size_t total = size_t(96) << 20;
  test::RawConnection c(s.port());
  ASSERT_TRUE(c.send(post_head("Transfer-Encoding: chunked\r\n")));
  auto [r, sent] = push_body(c, total, true);
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "request_too_large") << r.body;
  EXPECT_LT(sent, total) << "the server read the whole body before refusing it";
  const size_t after = test::peak_rss_bytes(s.pid());
  EXPECT_LT(after, before + (size_t(24) << 20)) << "peak RSS grew from " << before << " to " << after;
  EXPECT_EQ(test::get(s, "/health").status, 200);
}

TEST(ServerHostile, ContentLengthOverTheLimitIsRefusedBeforeTheBody) {
  auto& s = server();
  const size_t before = test::peak_rss_bytes(s.pid());
  test::RawConnection c(s.port());
  ASSERT_TRUE(c.send(post_head("Content-Length: 100000000\r\n")));
  auto [r, sent] = push_body(c, size_t(96) << 20, false);
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_LT(sent, size_t(96) << 20);
  EXPECT_LT(test::peak_rss_bytes(s.pid()), before + (size_t(24) << 20));
}

TEST(ServerHostile, BadFramingIs400) {
  auto& s = server();
  for (const std::string framing : {"Content-Length: -1\r\n", "Content-Length: 1e3\r\n", "Content-Length: 5\r\nContent-Length: 6\r\n",
                                    "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"}) {
    test::RawConnection c(s.port());
    ASSERT_TRUE(c.send(post_head(framing) + "hello"));
    auto r = c.read_response();
    EXPECT_EQ(r.status, 400) << framing << r.body;
  }
  test::RawConnection c(s.port());
  ASSERT_TRUE(c.send(post_head("Transfer-Encoding: chunked\r\n") + "zz\r\nhello\r\n"));
  EXPECT_EQ(c.read_response().status, 400);
  EXPECT_GE(test::metric(metrics(), "ember_requests_total{route=\"other\",status=\"400\"}"), 5);
}

TEST(ServerHostile, PipelinedRequestsAreAnsweredInOrder) {
  auto& s = server();
  test::RawConnection c(s.port());
  const std::string get = " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const std::string body = chat_json();
  ASSERT_TRUE(c.send("GET /health" + get + "GET /v1/models" + get + post_head("Content-Length: " + std::to_string(body.size()) + "\r\n") + body +
                     "GET /nowhere" + get + "GET /metrics" + get));
  auto health = c.read_response(), models = c.read_response(), chat = c.read_response(60000), missing = c.read_response(),
       m = c.read_response();
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.json()["status"], "ok") << health.body;
  EXPECT_EQ(models.json()["object"], "list") << models.body;
  EXPECT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(chat.json()["object"], "chat.completion") << chat.body;
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(m.body.find("ember_requests_total"), std::string::npos) << m.body;
  // The connection is still usable.
  ASSERT_TRUE(c.send("GET /health" + get));
  EXPECT_EQ(c.read_response().status, 200);
}

TEST(ServerHostile, BurstOfConnectionsAllAnsweredOrCounted) {
  auto& s = server();
  const double rejected0 = test::metric(metrics(), "ember_connections_rejected_total{reason=\"per_client\"}");
  constexpr int kClients = 128;
  std::vector<std::unique_ptr<test::RawConnection>> conns;
  for (int i = 0; i < kClients; i++) conns.push_back(std::make_unique<test::RawConnection>(s.port()));
  int ok = 0, refused = 0, other = 0;
  for (auto& c : conns) {
    if (!c->ok()) {
      other++;
      continue;
    }
    c->send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  }
  for (auto& c : conns) {
    int st = c->ok() ? c->read_response().status : 0;
    (st == 200 ? ok : st == 503 ? refused : other)++;
  }
  conns.clear();
  EXPECT_EQ(other, 0) << "connections neither answered nor refused";
  EXPECT_EQ(ok + refused, kClients);
  // --max-client-connections 100 (a connection of an earlier request may still be closing).
  EXPECT_GE(ok, 95);
  EXPECT_GE(refused, 28);
  // Every refusal is counted (the count is read once the server has seen the 128 close).
  double rejected = 0;
  for (int i = 0; i < 50 && rejected - rejected0 < refused; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rejected = test::metric(metrics(), "ember_connections_rejected_total{reason=\"per_client\"}");
  }
  EXPECT_EQ(rejected - rejected0, refused);
}

// 200 clients (from another loopback address) trickle a request head a byte at a time; a normal
// client is answered within 1 s throughout, the clients beyond the cap are refused, and the
// rest time out (--header-timeout 1): none of them holds a worker.
TEST(ServerHostile, SlowClientsDoNotStarveANormalOne) {
  auto& s = server();
  std::vector<std::unique_ptr<test::RawConnection>> slow;
  for (int i = 0; i < 200; i++) slow.push_back(std::make_unique<test::RawConnection>(s.port(), "127.0.0.2"));
  if (!slow.front()->ok()) GTEST_SKIP() << "127.0.0.2 is not usable as a source address here";
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n";
  auto client = s.client(1);
  client->set_connection_timeout(1, 0);
  for (size_t byte = 0; byte < 12; byte++) {
    for (auto& c : slow)
      if (!c->readable(0)) c->send(head.substr(byte, 1));  // until the server has answered it
    auto r = client->Get("/health");
    ASSERT_TRUE(r) << "a normal client waited more than 1 s behind slow ones (byte " << byte << ")";
    EXPECT_EQ(r->status, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Past the head deadline every slow client that was let in has been answered 408.
  int timed_out = 0, refused = 0;
  for (auto& c : slow) {
    int st = c->read_response(5000).status;
    timed_out += st == 408;
    refused += st == 503;
  }
  EXPECT_EQ(refused, 100);
  EXPECT_EQ(timed_out, 100);
  const std::string m = metrics();
  EXPECT_GE(test::metric(m, "ember_connections_timed_out_total"), 100);
  EXPECT_GE(test::metric(m, "ember_connections_rejected_total{reason=\"per_client\"}"), 100);
}

TEST(ServerHostile, SecondServerOnABusyPortFailsClearly) {
  auto& s = server();
  auto [status, out] = test::run_shell(test::ember_binary() + " serve --quiet --model " + pack() + " --port " + std::to_string(s.port()));
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("already in use"), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string(s.port())), std::string::npos) << out;
  std::tie(status, out) = test::run_shell(test::ember_binary() + " serve --quiet --model " + pack() + " --port 70000");
  EXPECT_NE(status, 0) << out;
  EXPECT_NE(out.find("70000"), std::string::npos) << out;
  EXPECT_EQ(test::get(s, "/health").status, 200);
}

TEST(ServerHostile, EmptyApiKeyIsRefused) {
  auto [status, out] = test::run_shell(test::ember_binary() + " serve --quiet --model " + pack() + " --port 0 --api-key ''");
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("--api-key"), std::string::npos) << out;
}

// A non-streaming client that hangs up is noticed while its request generates: the slot is
// freed and the request is counted as abandoned (499), not completed.
TEST(ServerHostile, NonStreamingDisconnectFreesItsSlot) {
  test::ServerProcess s(pack(), {"--parallel", "1", "--queue", "0"});
  const int ctx = test::get(s, "/v1/models").json()["data"][0]["context_length"].get<int>();
  const int max_tokens = ctx - 16;
  {
    test::RawConnection c(s.port());
    const std::string body = json{{"prompt", "a long story"}, {"max_tokens", max_tokens}, {"temperature", 1.0}, {"seed", 3}}.dump();
    ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
    int active = 0;
    for (int i = 0; i < 3000 && active == 0; i++) {
      active = test::get(s, "/health").json()["active"].get<int>();
      if (!active) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ(active, 1);
  }  // hangs up
  int active = 1;
  for (int i = 0; i < 600 && active != 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    active = test::get(s, "/health").json()["active"].get<int>();
  }
  EXPECT_EQ(active, 0);
  const std::string m = test::get(s, "/metrics").body;
  EXPECT_EQ(test::metric(m, "ember_requests_total{route=\"/v1/completions\",status=\"499\"}"), 1) << m;
  EXPECT_LT(test::metric(m, "ember_completion_tokens_total"), max_tokens) << m;
  auto after = test::post(s, "/v1/completions", json{{"prompt", "x"}, {"max_tokens", 2}}.dump());
  EXPECT_EQ(after.status, 200) << after.body;
}
