// The request parser of ember's socket layer (src/server/http_message.h): framing, limits that
// hold whatever the framing, bytes fed in any split, pipelined requests left for the next parse.
#include <gtest/gtest.h>

#include "server/http_message.h"

using namespace ember::server;
using State = RequestParser::State;

namespace {

HttpLimits limits(size_t body) {
  HttpLimits l;
  l.max_body_bytes = body;
  l.max_header_bytes = 1024;
  return l;
}

// Feeds `bytes` in pieces of `step`; returns the final state (Complete/Error stop early) and
// leaves unconsumed bytes in `rest`.
State feed_in_steps(RequestParser& p, const std::string& bytes, size_t step, std::string& rest) {
  State s = State::NeedMore;
  size_t pos = 0;
  while (pos < bytes.size()) {
    rest += bytes.substr(pos, step);
    pos += step;
    s = p.feed(rest);
    if (s != State::NeedMore) break;
  }
  rest += bytes.substr(std::min(pos, bytes.size()));
  return s;
}

}  // namespace

TEST(HttpMessage, ChunkedBodyInEverySplit) {
  const std::string req =
      "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: "
      "x\r\n\r\nGET /next HTTP/1.1\r\n\r\n";
  for (size_t step : {1, 2, 3, 7, 64, 4096}) {
    RequestParser p(limits(100));
    std::string rest;
    ASSERT_EQ(feed_in_steps(p, req, step, rest), State::Complete) << step;
    HttpRequest r = p.take();
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.path, "/v1/completions");
    EXPECT_EQ(r.body, "hello world") << step;
    EXPECT_EQ(r.header("host"), "a");
    EXPECT_TRUE(r.keep_alive());
    // The pipelined request is still there, whole.
    EXPECT_EQ(rest, "GET /next HTTP/1.1\r\n\r\n") << step;
    ASSERT_EQ(p.feed(rest), State::Complete);
    EXPECT_EQ(p.take().path, "/next");
  }
}

TEST(HttpMessage, BodyLimitHoldsForEveryFraming) {
  {
    RequestParser p(limits(10));
    std::string in = "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n";
    EXPECT_EQ(p.feed(in), State::Error);  // refused on the head, before any body byte
    EXPECT_EQ(p.error_status(), 413);
  }
  {
    RequestParser p(limits(10));
    std::string in = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n";
    EXPECT_EQ(p.feed(in), State::NeedMore);
    in = "5\r\n";  // 6 + 5 > 10: refused on the chunk size, before its data
    EXPECT_EQ(p.feed(in), State::Error);
    EXPECT_EQ(p.error_status(), 413);
  }
  {
    RequestParser p(limits(10));
    std::string in = "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789";
    EXPECT_EQ(p.feed(in), State::Complete);
  }
}

TEST(HttpMessage, MalformedFramingIs400) {
  for (const std::string head : {"Content-Length: -1", "Content-Length: +5", "Content-Length: 5 5", "Content-Length: 99999999999999999999",
                                 "Content-Length: 1\r\nContent-Length: 2", "Content-Length: 1\r\nTransfer-Encoding: chunked"}) {
    RequestParser p(limits(100));
    std::string in = "POST / HTTP/1.1\r\n" + head + "\r\n\r\n";
    EXPECT_EQ(p.feed(in), State::Error) << head;
    EXPECT_EQ(p.error_status(), 400) << head;
  }
  for (const std::string chunks : {"x\r\n", "5\r\nhelloX\r\n", "-1\r\n"}) {
    RequestParser p(limits(100));
    std::string in = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks;
    EXPECT_EQ(p.feed(in), State::Error) << chunks;
    EXPECT_EQ(p.error_status(), 400) << chunks;
  }
  RequestParser p(limits(100));
  std::string in = "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n";
  EXPECT_EQ(p.feed(in), State::Error);
  EXPECT_EQ(p.error_status(), 501);
  for (const std::string line : {"GET\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET / HTTP/1.1\r\nNoColon\r\n\r\n", "GET / HTTP/1.1\r\n folded\r\n\r\n"}) {
    RequestParser q(limits(100));
    std::string bytes = line;
    EXPECT_EQ(q.feed(bytes), State::Error) << line;
    EXPECT_EQ(q.error_status(), 400) << line;
  }
}

TEST(HttpMessage, HeadLimitAndExpectContinue) {
  RequestParser p(limits(100));
  std::string in = "GET / HTTP/1.1\r\nX: " + std::string(2000, 'a');
  EXPECT_EQ(p.feed(in), State::Error);  // no end of head yet, but already over the limit
  EXPECT_EQ(p.error_status(), 431);
  RequestParser e(limits(100));
  in = "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  EXPECT_EQ(e.feed(in), State::NeedMore);
  EXPECT_TRUE(e.head_done());
  EXPECT_TRUE(e.expects_continue());
  in = "ok";
  ASSERT_EQ(e.feed(in), State::Complete);
  EXPECT_FALSE(e.take().keep_alive());  // HTTP/1.0 without keep-alive
}

TEST(HttpMessage, PercentDecodedPathAndResponseHead) {
  RequestParser p(limits(100));
  std::string in = "GET /v1/models/a%20b%2 HTTP/1.1\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(p.feed(in), State::Complete);
  HttpRequest r = p.take();
  EXPECT_EQ(r.path, "/v1/models/a b%2");
  EXPECT_FALSE(r.keep_alive());
  EXPECT_EQ(response_head(413, {{"A", "b"}}), "HTTP/1.1 413 Payload Too Large\r\nA: b\r\n\r\n");
}
