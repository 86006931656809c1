#include "server/cors.h"

#include <algorithm>

#include "common/error.h"

namespace ember::server {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") + 1 - b);
}

// scheme "://" host [":" port], nothing after: what a browser sends in Origin.
bool looks_like_origin(const std::string& o) {
  const size_t sep = o.find("://");
  if (sep == std::string::npos || sep == 0 || sep + 3 >= o.size()) return false;
  const std::string rest = o.substr(sep + 3);
  return rest.find_first_of("/?# \t") == std::string::npos;
}

}  // namespace

CorsPolicy::CorsPolicy(const std::vector<std::string>& entries) {
  for (const auto& entry : entries) {
    size_t pos = 0;
    while (pos <= entry.size()) {
      size_t comma = entry.find(',', pos);
      if (comma == std::string::npos) comma = entry.size();
      std::string o = trim(entry.substr(pos, comma - pos));
      pos = comma + 1;
      if (o.empty()) continue;
      if (o == "*") {
        any_ = true;
        continue;
      }
      while (o.size() > 1 && o.back() == '/') o.pop_back();  // "http://x/" as people paste it
      if (!looks_like_origin(o))
        throw Error("'" + o + "' is not an origin", "--cors",
                    "give scheme://host[:port] as a browser sends it (e.g. http://localhost:5173), several separated by commas, or *");
      origins_.push_back(o);
    }
  }
  if (!any_ && origins_.empty() && !entries.empty()) throw Error("no origin given", "--cors", "give an origin such as http://localhost:5173, or *");
}

bool CorsPolicy::allows(const std::string& origin) const {
  if (origin.empty()) return false;
  return any_ || std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
}

CorsPolicy::Headers CorsPolicy::response_headers(const HttpRequest& req) const {
  const std::string origin = req.header("origin");
  if (!allows(origin)) return {};
  // A listed origin is echoed, so caches must keep answers to different origins apart.
  if (any_) return {{"Access-Control-Allow-Origin", "*"}};
  return {{"Access-Control-Allow-Origin", origin}, {"Vary", "Origin"}};
}

bool CorsPolicy::is_preflight(const HttpRequest& req) {
  return req.method == "OPTIONS" && !req.header("origin").empty() && !req.header("access-control-request-method").empty();
}

std::optional<CorsPolicy::Headers> CorsPolicy::preflight_headers(const HttpRequest& req) const {
  if (!allows(req.header("origin"))) return std::nullopt;
  Headers h;  // Access-Control-Allow-Origin comes with every response (response_headers)
  h.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  // The SDKs send their own x-stainless-* headers besides Authorization and Content-Type: any
  // header the browser asks for is fine, the API key is what guards the routes.
  const std::string asked = req.header("access-control-request-headers");
  h.emplace_back("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : asked);
  h.emplace_back("Access-Control-Max-Age", "600");
  return h;
}

}  // namespace ember::server
