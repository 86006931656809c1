// The web page `ember serve` answers at / (web/: chat and text-to-3D tabs) and the npm files it
// vendors (three.js for the 3D viewer), embedded at build time by cmake/embed_web.mjs.
#pragma once

#include <string_view>
#include <vector>

namespace ember::server {

struct HttpRequest;
class HttpResponder;

struct WebAsset {
  std::string_view path;          // URL path: "/index.html", "/vendor/three/build/three.module.js"
  std::string_view content_type;  // from the file's extension
  std::string_view bytes;
};

const std::vector<WebAsset>& web_assets();

// The asset a GET of `path` answers ("/" is /index.html); null when none.
const WebAsset* find_web_asset(std::string_view path);

// Answers a GET of `asset` (405 for other methods). Not cached by the browser: a new binary serves
// a new page at the same paths.
void serve_web_asset(const WebAsset& asset, const HttpRequest& req, HttpResponder& res);

}  // namespace ember::server
