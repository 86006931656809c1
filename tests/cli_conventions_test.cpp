// The flags people type from llama.cpp habit: -m, -c, -f, --temp, -n, --version / `ember
// version`, and llama.cpp-only flags answered with a note instead of a parser error; `ember
// devices` names features instead of printing numbers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "lfm2_test_pack.h"

using namespace ember;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string pack() {
  static std::string p = test::lfm2_test_pack("tiny").string();
  return p;
}

// The JSON object `ember generate --json` printed (notes may come before it).
json generated(const test::CliResult& r) {
  const size_t at = r.out.find("{\n");
  return at == std::string::npos ? json() : json::parse(r.out.substr(at), nullptr, false);
}

}  // namespace

TEST(CliConventions, Version) {
  auto flag = test::run_ember("--version");
  EXPECT_EQ(flag.status, 0) << flag.out;
  EXPECT_TRUE(std::regex_search(flag.out, std::regex("^ember [0-9]+\\.[0-9]+\\.[0-9]+\n$"))) << flag.out;
  auto cmd = test::run_ember("version");
  EXPECT_EQ(cmd.status, 0);
  EXPECT_EQ(cmd.out, flag.out);
}

TEST(CliConventions, ShortFlagsMeanWhatLlamaCppUsersExpect) {
  auto longhand = test::run_ember("generate --model " + pack() + " --prompt 'Once upon a time' --max-tokens 6 --temperature 0 --json --quiet");
  ASSERT_EQ(longhand.status, 0) << longhand.out;
  const fs::path prompt = fs::path(testing::TempDir()) / ("ember_prompt_" + std::to_string(getpid()) + ".txt");
  std::ofstream(prompt) << "Once upon a time";
  auto shorthand = test::run_ember("generate -m " + pack() + " -f " + prompt.string() + " -n 6 --temp 0 -c 64 --json --quiet");
  ASSERT_EQ(shorthand.status, 0) << shorthand.out;
  EXPECT_EQ(generated(shorthand)["ids"], generated(longhand)["ids"]);
  EXPECT_EQ(generated(shorthand)["prompt_tokens"], generated(longhand)["prompt_tokens"]);
  // -f and --prompt are one prompt: both is an error.
  auto both = test::run_ember("generate -m " + pack() + " -f " + prompt.string() + " -p x --quiet");
  EXPECT_NE(both.status, 0);
  EXPECT_NE(both.out.find("excludes"), std::string::npos) << both.out;
  fs::remove(prompt);
  auto missing = test::run_ember("generate -m " + pack() + " -f /nonexistent/prompt.txt --quiet");
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.out.find("/nonexistent/prompt.txt"), std::string::npos) << missing.out;
}

TEST(CliConventions, ContextSizeBoundsPromptAndGeneration) {
  const json p = generated(test::run_ember("generate -m " + pack() + " -p 'Once upon a time' -n 1 --temp 0 --json --quiet"));
  ASSERT_TRUE(p.is_object());
  const int prompt_tokens = p["prompt_tokens"];
  // Room for 2 generated tokens after the prompt.
  auto r = test::run_ember("generate -m " + pack() + " -p 'Once upon a time' -n 50 --temp 0 --json --quiet -c " +
                           std::to_string(prompt_tokens + 2));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_LE(generated(r)["generated_tokens"].get<int>(), 2);
  auto small = test::run_ember("generate -m " + pack() + " -p 'Once upon a time' --quiet -c " + std::to_string(prompt_tokens));
  EXPECT_NE(small.status, 0);
  EXPECT_NE(small.out.find("--prompt"), std::string::npos) << small.out;
  auto big = test::run_ember("generate -m " + pack() + " -p x --quiet -c 100000000");
  EXPECT_NE(big.status, 0);
  EXPECT_NE(big.out.find("-c/--ctx-size"), std::string::npos) << big.out;
  EXPECT_NE(big.out.find("maxTotalPositions"), std::string::npos) << big.out;
}

TEST(CliConventions, LlamaCppOnlyFlagsGetANote) {
  auto r = test::run_ember("generate -m " + pack() + " -p Hi -n 2 --temp 0 --json --quiet -ngl 99 -t 8 --mlock -fa --no-mmap -b 512");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* flag : {"-ngl", "-t", "--mlock", "-fa", "--no-mmap", "-b"})
    EXPECT_NE(r.out.find(std::string("ember: note: ") + flag), std::string::npos) << flag << "\n" << r.out;
  EXPECT_NE(r.out.find("ember: note: -ngl/--n-gpu-layers/--gpu-layers has no effect: every layer runs on the GPU"), std::string::npos)
      << r.out;
  EXPECT_EQ(generated(r)["generated_tokens"], 2);
  // -fa with llama.cpp's newer value form, and the long spelling of -ngl.
  auto v = test::run_ember("generate -m " + pack() + " -p Hi -n 1 --json --quiet --flash-attn on --n-gpu-layers all");
  EXPECT_EQ(v.status, 0) << v.out;
  EXPECT_NE(v.out.find("--flash-attn has no effect"), std::string::npos) << v.out;
  // Help lists them in their own group.
  auto help = test::run_ember("serve -h");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("llama.cpp flags"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--cors"), std::string::npos) << help.out;
}

TEST(CliConventions, DevicesNameFeatures) {
  auto r = test::run_ember("devices");
  ASSERT_EQ(r.status, 0) << r.out;
  ASSERT_NE(r.out.find("features:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" 0x"), std::string::npos) << "a feature printed as a number:\n" << r.out;
  EXPECT_NE(r.out.find("shader-f16"), std::string::npos) << r.out;
  auto j = json::parse(test::run_ember("devices --json").out);
  for (const auto& a : j["adapters"])
    for (const auto& f : a["features"]) EXPECT_EQ(f.get<std::string>().rfind("0x", 0), std::string::npos) << f;
}
