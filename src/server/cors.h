// Cross-origin access for browsers (`ember serve --cors ORIGIN`): which origins may call the API,
// the Access-Control-* headers a response to them carries, and the answer to a preflight
// (OPTIONS). Without any --cors origin no CORS header is ever sent, so browsers keep pages of
// other origins out, as they do for any server that says nothing.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/http_message.h"

namespace ember::server {

class CorsPolicy {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;
  CorsPolicy() = default;
  // Each entry is one origin ("https://app.example:8443"), a comma-separated list of them, or "*"
  // (any origin). Throws ember::Error naming --cors for an entry that is not an origin.
  explicit CorsPolicy(const std::vector<std::string>& entries);

  bool enabled() const { return any_ || !origins_.empty(); }
  bool allows(const std::string& origin) const;
  // Headers for a response to `req` (none when it carries no allowed Origin).
  Headers response_headers(const HttpRequest& req) const;
  // A preflight is an OPTIONS request with Origin and Access-Control-Request-Method.
  static bool is_preflight(const HttpRequest& req);
  // The headers answering an allowed preflight (with 204) besides response_headers', or nullopt
  // when its origin is not allowed.
  std::optional<Headers> preflight_headers(const HttpRequest& req) const;

 private:
  bool any_ = false;
  std::vector<std::string> origins_;
};

}  // namespace ember::server
