// The web page `ember serve` answers at / and POST /v1/text-to-3d, on the real binary with the tiny
// model and `synth trellis-pipeline --small` stages: the embedded files with their content types,
// the text-to-3D route's answers and refusals, and the page driven in headless Chromium
// (tests/node/web_ui.mjs): chat with a streamed reply, stop mid-stream, reload, the 3D tab.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cli_util.h"
#include "lfm2_test_pack.h"
#include "mesh_check.h"
#include "server_util.h"

using namespace ember;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> from_base64(const std::string& s) {
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52 : c == '+' ? 62 : c == '/' ? 63 : -1;
    if (v < 0) continue;  // '=' padding
    acc = acc << 6 | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(uint8_t(acc >> bits));
    }
  }
  return out;
}

// The shared server's API key: the page must ask for it.
const char* kKey = "sesame";
const httplib::Headers kAuth = {{"Authorization", std::string("Bearer ") + kKey}};

class WebUi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::path(testing::TempDir()) / ("ember_web_ui_" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    auto r = test::run_ember("synth trellis-pipeline --small --seed 5 --out " + (*dir_ / "pipe").string());
    ASSERT_EQ(r.status, 0) << r.out;
    server_ = new test::ServerProcess(test::lfm2_test_pack("tiny").string(),
                                      {"--parallel", "2", "--stages", (*dir_ / "pipe").string(), "--api-key", kKey});
  }
  static void TearDownTestSuite() {
    delete server_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  static inline fs::path* dir_ = nullptr;
  static inline test::ServerProcess* server_ = nullptr;
};

TEST_F(WebUi, PageAndVendoredFilesWithContentTypes) {
  auto& s = *server_;
  auto page = test::get(s, "/");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.headers.find("Content-Type")->second, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<title>ember</title>"), std::string::npos);
  EXPECT_EQ(test::get(s, "/index.html").body, page.body);
  const std::pair<const char*, const char*> files[] = {
      {"/app.js", "text/javascript; charset=utf-8"}, {"/chat.js", "text/javascript; charset=utf-8"},
      {"/app.css", "text/css; charset=utf-8"}, {"/vendor/three/build/three.module.js", "text/javascript; charset=utf-8"},
      {"/vendor/three/build/three.core.js", "text/javascript; charset=utf-8"},
      {"/vendor/three/examples/jsm/loaders/GLTFLoader.js", "text/javascript; charset=utf-8"},
      {"/vendor/three/LICENSE", "text/plain; charset=utf-8"}};
  for (auto [path, type] : files) {
    auto r = test::get(s, path);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.headers.find("Content-Type")->second, type) << path;
    EXPECT_GT(r.body.size(), 100u) << path;
  }
  // The files on disk, byte for byte (the embedding escapes every byte a C++ literal could mangle:
  // quotes, backslashes, '?', non-ASCII), each of web/ at its own name.
  auto disk = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), {});
  };
  EXPECT_EQ(test::get(s, "/vendor/three/build/three.core.js").body, disk(EMBER_SOURCE_DIR "/node_modules/three/build/three.core.js"));
  int web_files = 0;
  for (const auto& e : fs::directory_iterator(EMBER_SOURCE_DIR "/web")) {
    EXPECT_EQ(test::get(s, "/" + e.path().filename().string()).body, disk(e.path())) << e.path();
    web_files++;
  }
  EXPECT_GE(web_files, 5);

  EXPECT_EQ(test::get(s, "/nothing.js").status, 404);
  auto post = test::post(s, "/app.js", "{}");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.headers.find("Allow")->second, "GET");
}

TEST_F(WebUi, PageNeedsNoApiKeyButTheApiDoes) {
  auto& s = *server_;
  EXPECT_EQ(test::get(s, "/").status, 200);
  EXPECT_EQ(test::get(s, "/app.js").status, 200);
  EXPECT_EQ(test::get(s, "/v1/text-to-3d").status, 401);
  EXPECT_EQ(test::post(s, "/v1/text-to-3d", R"({"prompt": "a chair"})").status, 401);
  EXPECT_EQ(test::get(s, "/v1/text-to-3d", kAuth).status, 200);
}

TEST(WebUiNoStages, TextTo3DRouteSaysHowToEnableIt) {
  test::ServerProcess s(test::lfm2_test_pack("tiny").string(), {"--parallel", "1"});
  auto info = test::get(s, "/v1/text-to-3d");
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(info.json()["available"], false);
  EXPECT_NE(info.json()["message"].get<std::string>().find("--stages"), std::string::npos);
  auto gen = test::post(s, "/v1/text-to-3d", R"({"prompt": "a chair"})");
  EXPECT_EQ(gen.status, 404) << gen.body;
  EXPECT_EQ(gen.json()["error"]["code"], "text_to_3d_unavailable");
}

TEST_F(WebUi, TextTo3DRouteAnswersAGlbAndPreview) {
  auto& s = *server_;
  auto info = test::get(s, "/v1/text-to-3d", kAuth);
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(info.json()["available"], true);
  EXPECT_FALSE(info.json()["random_stages"].empty());  // synth stages say so

  const std::string body = R"({"prompt": "a small red chair", "seed": 2, "steps": 2, "preview_size": 32})";
  auto r = test::post(s, "/v1/text-to-3d", body, kAuth);
  ASSERT_EQ(r.status, 200) << r.body;
  json j = r.json();
  EXPECT_EQ(j["steps"], 2);
  const auto glb = from_base64(j["glb"].get<std::string>());
  test::GlbContents mesh;
  ASSERT_NO_THROW(mesh = test::validate_glb(glb));
  EXPECT_EQ(mesh.indices.size(), 3 * j["triangles"].get<size_t>());
  const auto png = from_base64(j["preview_png"].get<std::string>());
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(std::string(png.begin() + 1, png.begin() + 4), "PNG");
}

TEST_F(WebUi, StagesWithoutAModelServeThePageAndTextTo3DOnly) {
  test::ServerProcess s("", {"--stages", (*dir_ / "pipe").string()});
  EXPECT_EQ(test::get(s, "/").status, 200);
  EXPECT_EQ(test::get(s, "/health").json()["slots"], 0);
  EXPECT_EQ(test::get(s, "/metrics").status, 200);
  auto models = test::get(s, "/v1/models");
  EXPECT_EQ(models.status, 404);
  EXPECT_NE(models.body.find("--model"), std::string::npos) << models.body;
  auto chat = test::post(s, "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(chat.status, 404);
  EXPECT_EQ(chat.json()["error"]["code"], "model_not_found");
  auto r = test::post(s, "/v1/text-to-3d", R"({"prompt": "a lamp", "steps": 1, "preview_size": 16})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NO_THROW(test::validate_glb(from_base64(r.json()["glb"].get<std::string>())));
  EXPECT_EQ(s.stop(), 0) << s.log();
}

TEST(WebUiCli, ServeWithoutModelOrStagesIsAClearError) {
  auto r = test::run_ember("serve --port 0");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--stages"), std::string::npos) << r.out;
}

TEST_F(WebUi, TextTo3DRouteRefusesBadRequestsNamingTheField) {
  auto& s = *server_;
  const std::pair<const char*, const char*> cases[] = {
      {R"({})", "prompt"},
      {R"({"prompt": ""})", "prompt"},
      {R"({"prompt": 3})", "prompt"},
      {R"({"prompt": "x", "steps": 0})", "steps"},
      {R"({"prompt": "x", "steps": 1000})", "steps"},
      {R"({"prompt": "x", "steps": 2.5})", "steps"},
      {R"({"prompt": "x", "cfg": -1})", "cfg"},
      {R"({"prompt": "x", "seed": -4})", "seed"},
      {R"({"prompt": "x", "colour": "red"})", "colour"},
  };
  for (auto [body, param] : cases) {
    auto r = test::post(s, "/v1/text-to-3d", body, kAuth);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    EXPECT_EQ(r.json()["error"]["param"], param) << body << " -> " << r.body;
  }
  EXPECT_EQ(test::post(s, "/v1/text-to-3d", "not json", kAuth).status, 400);
  auto put = test::RawConnection(s.port());
  ASSERT_TRUE(put.send(std::string("PUT /v1/text-to-3d HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") + kKey + "\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(put.read_response().status, 405);
}

// The page in headless Chromium. Skips only where chromium is missing outside CI; in CI
// (CI=true) a missing browser fails.
TEST_F(WebUi, BrowserChatsStreamsStopsReloadsAndShowsA3DAsset) {
  const char* env = std::getenv("EMBER_CHROMIUM");
  const std::string chromium = env ? env : "/usr/bin/chromium";
  if (::access(chromium.c_str(), X_OK) != 0) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << chromium << " is missing in CI: scripts/setup.sh installs Debian's chromium";
    GTEST_SKIP() << chromium << " not found: install Debian's chromium (scripts/setup.sh does) to run the browser test";
  }
  const std::string out = (*dir_ / "browser").string();
  fs::create_directories(out);
  const std::string base = "http://127.0.0.1:" + std::to_string(server_->port());
  auto [status, text] = test::run_shell("cd " EMBER_SOURCE_DIR " && EMBER_CHROMIUM='" + chromium + "' node tests/node/web_ui.mjs " + base +
                                        " '" + out + "' --3d --key " + kKey);
  ASSERT_EQ(status, 0) << text << "\nserver log:\n" << server_->log();
  const auto line = text.substr(text.rfind('{', text.find("\"steps\"")));
  json r = json::parse(line, nullptr, false);
  ASSERT_TRUE(r.is_object()) << text;
  EXPECT_EQ(r["ok"], true) << text;
  EXPECT_TRUE(fs::exists(out + "/web-ui.png"));
  EXPECT_TRUE(fs::exists(out + "/web-ui-3d.png"));
  // The slot of the stopped reply was free again (the script checked /health; the server agrees now).
  EXPECT_EQ(test::get(*server_, "/health").json()["active"], 0);
  if (const char* keep = std::getenv("EMBER_WEB_UI_SCREENSHOTS")) {
    fs::copy_file(out + "/web-ui.png", fs::path(keep) / "web-ui.png", fs::copy_options::overwrite_existing);
    fs::copy_file(out + "/web-ui-3d.png", fs::path(keep) / "web-ui-3d.png", fs::copy_options::overwrite_existing);
  }
}

}  // namespace
