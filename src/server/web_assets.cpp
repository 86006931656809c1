#include "server/web_assets.h"

#include <string>

#include "server/api_error.h"
#include "server/http_listener.h"

namespace ember::server {

const WebAsset* find_web_asset(std::string_view path) {
  if (path == "/") path = "/index.html";
  for (const auto& a : web_assets())
    if (a.path == path) return &a;
  return nullptr;
}

void serve_web_asset(const WebAsset& asset, const HttpRequest& req, HttpResponder& res) {
  if (req.method != "GET")
    return (void)res.send(405, "application/json",
                          error_body("method " + req.method + " is not allowed on " + req.path + " (use GET)", "invalid_request_error",
                                     std::nullopt, "method_not_allowed"),
                          {{"Allow", "GET"}});
  res.send(200, std::string(asset.content_type), std::string(asset.bytes),
           {{"Cache-Control", "no-cache"}, {"X-Content-Type-Options", "nosniff"}});
}

}  // namespace ember::server
