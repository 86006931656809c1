// Quiet wrong states made loud (docs/reliability.md): non-finite weights in a checkpoint or a
// pack, a tokenizer too small to encode text, --seed -1, and Ctrl-C in `ember chat`.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "cli_util.h"
#include "formats/llm_pack.h"
#include "formats/safetensors.h"
#include "lfm2_test_pack.h"
#include "temp_root.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

using test::TempRoot;

std::string q(const fs::path& p) {
  std::string s = "'";
  s += p.string();
  s += "'";
  return s;
}

// Overwrites 4 bytes of `file` at `offset` with `value`.
void poke_f32(const fs::path& file, uint64_t offset, float value) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(reinterpret_cast<const char*>(&value), 4);
}

fs::path copy_of_tiny_pack(const fs::path& root) {
  fs::copy(test::lfm2_test_pack("tiny"), root / "pack", fs::copy_options::recursive);
  return root / "pack";
}

}  // namespace

TEST(Reliability, PackOfNonFiniteCheckpointIsRefused) {
  TempRoot t("rel_nan_ckpt");
  ASSERT_EQ(test::run_ember("synth lfm2 --shape tiny --out " + q(t.dir / "hf")).status, 0);
  const fs::path st = t.dir / "hf" / "model.safetensors";
  const std::string name = "model.layers.0.feed_forward.w1.weight";
  uint64_t begin, header = 0;
  {
    auto f = formats::SafetensorsFile::open(st);
    ASSERT_EQ(f.info(name).dtype, formats::DType::F32);
    begin = f.info(name).begin;
    std::ifstream in(st, std::ios::binary);
    in.read(reinterpret_cast<char*>(&header), 8);
  }
  poke_f32(st, 8 + header + begin + 4 * 37, std::nanf(""));
  auto r = test::run_ember("pack lfm2 --quiet --from " + q(t.dir / "hf") + " --out " + q(t.dir / "pack"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find(name), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NaN"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("index 37"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(t.dir / "pack"));
}

TEST(Reliability, InspectFindsNonFiniteWeights) {
  TempRoot t("rel_nan_pack");
  const fs::path pack = copy_of_tiny_pack(t.dir);
  ASSERT_EQ(test::run_ember("inspect " + q(pack)).status, 0);
  const auto* s = formats::LlmPack::open(pack).runtime().find_section("head.norm");
  ASSERT_TRUE(s);
  poke_f32(pack / "weights.bin", s->offset + 4 * 5, INFINITY);
  auto r = test::run_ember("inspect " + q(pack));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("head.norm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("element 5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("non-finite"), std::string::npos) << r.out;
}

TEST(Reliability, InspectRefusesAOneEntryVocabulary) {
  TempRoot t("rel_vocab");
  const fs::path pack = copy_of_tiny_pack(t.dir);
  std::ofstream(pack / "tokenizer.json") << R"({"version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": null,
    "post_processor": null, "decoder": null, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})";
  auto r = test::run_ember("inspect " + q(pack));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("tokenizer.json"), std::string::npos) << r.out;
}

TEST(Reliability, SeedMinusOneIsRandomAndPrinted) {
  const std::string base = "generate --quiet --model " + q(test::lfm2_test_pack("tiny")) + " --prompt hello -n 8 --temperature 1.5 --json";
  auto a = test::run_ember(base + " --seed -1");
  ASSERT_EQ(a.status, 0) << a.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(a.out, m, std::regex("ember generate: seed (\\d+)"))) << a.out;
  auto again = test::run_ember(base + " --seed " + m[1].str());
  ASSERT_EQ(again.status, 0) << again.out;
  auto ids = [](const std::string& out) {
    std::smatch i;
    return std::regex_search(out, i, std::regex("\"ids\":\\s*\\[[^\\]]*\\]")) ? i[0].str() : std::string("none");
  };
  EXPECT_EQ(ids(a.out), ids(again.out)) << a.out << "\n" << again.out;
  EXPECT_NE(ids(a.out), "none") << a.out;
  EXPECT_NE(test::run_ember(base + " --seed -2").status, 0);
}

// Ctrl-C during a reply stops it and returns to the prompt with the conversation kept; Ctrl-C
// at the prompt ends the chat normally.
TEST(Reliability, ChatCtrlCStopsTheReplyAndKeepsTheConversation) {
  int in[2], out[2];
  ASSERT_EQ(pipe(in), 0);
  ASSERT_EQ(pipe(out), 0);
  const std::string pack = test::lfm2_test_pack("tiny").string();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    std::vector<std::string> argv = {test::ember_binary(), "chat", "--quiet", "--model", pack, "-n", "100000", "--temperature", "1", "--seed", "3"};
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    execv(c[0], c.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  std::string seen;
  // Reads stdout until `pred` holds (or 60 s pass); true when it did.
  auto read_until = [&](auto pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!pred() && std::chrono::steady_clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) return pred();
      seen.append(buf, static_cast<size_t>(n));
    }
    return pred();
  };
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t p = seen.find(what); p != std::string::npos; p = seen.find(what, p + 1)) n++;
    return n;
  };
  const std::string stopped = "[stopped]\n> ";
  ASSERT_TRUE(read_until([&] { return seen.rfind("> ", 0) == 0; })) << seen;
  ASSERT_EQ(write(in[1], "tell me a very long story\n", 26), 26);
  ASSERT_TRUE(read_until([&] { return seen.size() > 6; })) << seen;  // the reply is streaming
  kill(pid, SIGINT);
  ASSERT_TRUE(read_until([&] { return count(stopped) >= 1; })) << seen;
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0) << "the chat ended on Ctrl-C during a reply";
  // The conversation goes on, and Ctrl-C at the prompt ends it with status 0.
  ASSERT_EQ(write(in[1], "and then?\n", 10), 10);
  const size_t second = seen.size();
  ASSERT_TRUE(read_until([&] { return seen.size() > second + 4; })) << seen;
  kill(pid, SIGINT);
  ASSERT_TRUE(read_until([&] { return count(stopped) >= 2; })) << seen;
  // A signal landing just before the prompt's read is taken at the next one: send until it ends.
  int st = 0;
  bool ended = false;
  for (int i = 0; i < 100 && !ended; i++) {
    kill(pid, SIGINT);
    for (int j = 0; j < 10 && !ended; j++) {
      ended = waitpid(pid, &st, WNOHANG) == pid;
      if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ASSERT_TRUE(ended);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << seen;
  close(in[1]);
  close(out[0]);
}
