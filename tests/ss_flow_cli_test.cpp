// `ember ss-flow` rejects bad input with a clear message and a non-zero exit, before any work.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "common/atomic_file.h"
#include "trellis/tensor_files.h"

namespace fs = std::filesystem;

namespace {

struct Result {
  int status;
  std::string output;
};

Result run(const std::string& args) {
  std::string cmd = std::string(EMBER_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  Result r{-1, ""};
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
  r.status = pclose(p);
  return r;
}

class SsFlowCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember_ss_flow_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ember::trellis::write_npy(dir_ / "cond.npy", {77, 768}, std::vector<float>(77 * 768, 0.5f));
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A run that must fail with `needle` in its message and leave no output file.
  void expect_error(const std::string& args, const std::string& needle, const std::string& cond = "cond.npy",
                    const std::string& neg = "cond.npy") {
    auto r = run("ss-flow --synthetic --cond " + path(cond) + " --neg-cond " + path(neg) + " --out " +
                 path("out.npy") + " " + args);
    EXPECT_NE(r.status, 0) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << "wanted '" << needle << "' in: " << r.output;
    EXPECT_FALSE(fs::exists(path("out.npy")));
  }
  fs::path dir_;
};

}  // namespace

TEST_F(SsFlowCli, BadSamplerOptions) {
  expect_error("--steps 0", "--steps");
  expect_error("--cfg-interval 0.9,0.5", "reversed");
  expect_error("--cfg-interval 0.5,1.5", "within [0, 1]");
  expect_error("--cfg-interval half", "not LO,HI");
}

TEST_F(SsFlowCli, ContextOfTheWrongShape) {
  ember::trellis::write_npy(path("short.npy"), {76, 768}, std::vector<float>(76 * 768));
  expect_error("", "shape (76, 768) where (77, 768) was expected", "short.npy");
}

TEST_F(SsFlowCli, ContextOfTheWrongDtype) {
  // A float64 array, written by hand.
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (77, 768), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += char(1);
  bytes += char(0);
  bytes += char(header.size() & 0xff);
  bytes += char(header.size() >> 8);
  bytes += header + std::string(77 * 768 * 8, '\0');
  ember::write_file_atomic(path("f64.npy"), bytes);
  expect_error("", "dtype '<f8' is not supported", "cond.npy", "f64.npy");
}

TEST_F(SsFlowCli, ContextWithNaNOrInf) {
  std::vector<float> v(77 * 768, 0.0f);
  v[1234] = std::numeric_limits<float>::quiet_NaN();
  ember::trellis::write_npy(path("nan.npy"), {77, 768}, v);
  expect_error("", "non-finite value", "nan.npy");
  v[1234] = std::numeric_limits<float>::infinity();
  ember::trellis::write_npy(path("inf.npy"), {1, 77, 768}, v);
  expect_error("", "at element 1234", "cond.npy", "inf.npy");
}

TEST_F(SsFlowCli, MissingStageIsAClearError) {
  auto r = run("ss-flow --stage " + path("no-such-stage") + " --cond " + path("cond.npy") + " --neg-cond " + path("cond.npy") +
               " --out " + path("out.npy"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("no-such-stage"), std::string::npos) << r.output;
}

TEST(SsFlowNpy, RoundTripsAndReadsF16) {
  const auto p = fs::temp_directory_path() / ("ember_npy_" + std::to_string(::getpid()) + ".npy");
  std::vector<float> v{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1e-3f};
  ember::trellis::write_npy(p, {2, 3}, v);
  auto a = ember::trellis::read_npy(p);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.values, v);
  fs::remove(p);
}
