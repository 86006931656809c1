// The GPU layer itself: buffers, errors, the profiler and the kernel harness with its first
// real kernel family (row sums, subgroup and shared-memory reductions) against the CPU reference.
#include <gtest/gtest.h>

#include "common/error.h"
#include "gpu/kernel_sources.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "gpu_fixture.h"
#include "reference/reduce_reference.h"

using namespace ember;
using ember::test::test_device;
using ember::test::test_kernels;

TEST(GpuBuffers, RoundTripSmallAndUnaligned) {
  auto& dev = test_device();
  std::vector<uint8_t> bytes(1001);
  for (size_t i = 0; i < bytes.size(); i++) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
  gpu::Buffer b = dev.create_storage(bytes.size(), "roundtrip");
  dev.upload(b, 0, bytes);
  EXPECT_EQ(dev.download(b, 0, bytes.size()), bytes);
}

TEST(GpuBuffers, RoundTripAbove64MiB) {
  auto& dev = test_device();
  const size_t n = (80u << 20) / 4;  // 80 MiB
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<uint32_t>(i * 2654435761u);
  gpu::Buffer b = dev.create_storage(n * 4, "big");
  dev.upload(b, std::span<const uint32_t>(v));
  auto back = dev.download_as<uint32_t>(b);
  ASSERT_EQ(back.size(), n);
  EXPECT_TRUE(back == v);
}

TEST(GpuBuffers, OverrunningUploadIsAClearError) {
  auto& dev = test_device();
  gpu::Buffer b = dev.create_storage(16, "small");
  std::vector<uint8_t> bytes(32);
  try {
    dev.upload(b, 0, bytes);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("small"), std::string::npos);
  }
}

TEST(GpuKernels, InvalidWgslNamesKernelAndLine) {
  // A shader with an error on a known line, compiled through the real cache path.
  auto& dev = test_device();
  gpu::KernelCache cache(dev);
  try {
    cache.get({.file = "test_broken.wgsl"});
    FAIL() << "expected a compilation error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("kernel test_broken"), std::string::npos) << msg;
    EXPECT_NE(msg.find("src/kernels/test_broken.wgsl:6:"), std::string::npos) << msg;
  }
}

TEST(GpuKernels, OversizedBindingIsAClearError) {
  auto& dev = test_device();
  const uint64_t max = dev.limits().maxStorageBufferBindingSize;
  if (max >= dev.limits().maxBufferSize) GTEST_SKIP() << "adapter binds whole buffers";
  gpu::Buffer big = dev.create_storage(max + 256, "oversized");
  gpu::Buffer out = dev.create_storage(256, "out");
  gpu::Buffer params = dev.create_uniform(std::array<uint32_t, 4>{1, 1, 0, 0}, "params");
  const auto& k = test_kernels().get({.file = "row_sum.wgsl", .constants = {{"WG", 64}}});
  try {
    test_kernels().bind(k, {{&big}, {&out}, {&params}});
    FAIL() << "expected a binding-size error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("maxStorageBufferBindingSize"), std::string::npos) << msg;
    EXPECT_NE(msg.find("oversized"), std::string::npos) << msg;
  }
}

TEST(GpuKernels, ValidationErrorInRecordingBecomesAnException) {
  auto& dev = test_device();
  gpu::Buffer small = dev.create_storage(16, "a");
  gpu::Buffer other = dev.create_storage(16, "b");
  gpu::Device fresh = gpu::Device::open({});  // a device error is sticky: use a private device
  gpu::Buffer x = fresh.create_storage(16, "x");
  gpu::Buffer y = fresh.create_storage(16, "y");
  gpu::Recorder rec(fresh);
  rec.copy(x, 0, y, 8, 16);  // past the end of y: a validation error at finish/submit
  rec.submit();
  EXPECT_THROW(fresh.wait_idle("copy past the end"), Error);
  EXPECT_THROW(fresh.check("after the error"), Error);  // nothing continues after a device error
}

TEST(GpuKernels, PreprocessorKeepsFileLineOrigins) {
  auto shader = gpu::preprocess_wgsl("row_sum.wgsl", {"SUBGROUPS"});
  ASSERT_FALSE(shader.origins.empty());
  EXPECT_NE(shader.text.find("enable subgroups;"), std::string::npos);
  EXPECT_NE(shader.text.find("subgroupAdd"), std::string::npos);
  bool from_include = false;
  for (const auto& o : shader.origins) from_include |= o.file == "reduce.wgsl";
  EXPECT_TRUE(from_include);
  auto plain = gpu::preprocess_wgsl("row_sum.wgsl", {});
  EXPECT_EQ(plain.text.find("subgroupAdd("), std::string::npos);
  EXPECT_EQ(plain.text.find("enable subgroups"), std::string::npos);
}

// Every embedded kernel's directives parse (an `#if A || B` is an error, not a silent false).
TEST(GpuKernels, EveryEmbeddedKernelPreprocesses) {
  for (const auto& [file, text] : gpu::embedded_kernel_sources())
    EXPECT_NO_THROW(gpu::preprocess_wgsl(file, {})) << file;
}

namespace {

struct RowSumParams {
  uint32_t rows, cols, pad0, pad1;
};
static_assert(sizeof(RowSumParams) == 16);

std::vector<float> gpu_row_sum(const std::vector<float>& x, uint32_t rows, uint32_t cols, bool subgroups, uint32_t wg) {
  auto& dev = test_device();
  auto& kernels = test_kernels();
  gpu::KernelKey key{.file = "row_sum.wgsl", .constants = {{"WG", wg}}};
  if (subgroups) key.defines.insert("SUBGROUPS");
  const gpu::Kernel& k = kernels.get(key);
  gpu::Buffer in = dev.create_storage(x.size() * 4, "x");
  dev.upload(in, std::span<const float>(x));
  gpu::Buffer out = dev.create_storage(rows * 4, "out");
  std::vector<float> poison(rows, test::kPoison);
  dev.upload(out, std::span<const float>(poison));
  gpu::Buffer params = dev.create_uniform(RowSumParams{rows, cols, 0, 0}, "params");
  gpu::BindGroup g = kernels.bind(k, {{&in}, {&out}, {&params}});
  gpu::Recorder rec(dev);
  rec.dispatch(k, g, rows);
  rec.submit();
  return dev.download_as<float>(out);
}

}  // namespace

class RowSumTest : public ::testing::TestWithParam<std::tuple<bool, uint32_t>> {};

TEST_P(RowSumTest, MatchesReferenceOnAwkwardShapes) {
  auto [subgroups, wg] = GetParam();
  if (subgroups && !test_device().has_subgroups()) GTEST_SKIP() << "no subgroups";
  uint32_t seed = 1;
  for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 1}, {3, 7}, {17, 1000}, {5, 4099}, {64, 255}}) {
    auto x = test::random_floats(size_t(rows) * cols, seed++);
    auto ref = reference::row_sum(x, rows, cols);
    auto got = gpu_row_sum(x, rows, cols, subgroups, wg);
    EXPECT_LT(test::rel_l2(got, ref), test::kF32Tolerance) << rows << "x" << cols;
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, RowSumTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(32u, 64u, 256u)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "subgroup" : "shared") + "_wg" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(GpuProfiler, TimestampsIncreaseAndNameRegions) {
  auto& dev = test_device();
  gpu::Profiler prof(dev, 16);
  const auto& k = test_kernels().get({.file = "row_sum.wgsl", .constants = {{"WG", 64}}});
  auto x = test::random_floats(64 * 4096, 3);
  gpu::Buffer in = dev.create_storage(x.size() * 4, "x");
  dev.upload(in, std::span<const float>(x));
  gpu::Buffer out = dev.create_storage(64 * 4, "out");
  gpu::Buffer params = dev.create_uniform(RowSumParams{64, 4096, 0, 0}, "params");
  gpu::BindGroup g = test_kernels().bind(k, {{&in}, {&out}, {&params}});
  gpu::Recorder rec(dev, &prof);
  rec.dispatch(k, g, 64, 1, 1, "first");
  rec.dispatch(k, g, 64, 1, 1, "second");
  rec.dispatch(k, g, 64, 1, 1, "first");
  rec.submit();
  auto regions = prof.collect();
  ASSERT_EQ(regions.size(), 3u);
  EXPECT_EQ(regions[0].name, "first");
  EXPECT_EQ(regions[1].name, "second");
  for (size_t i = 0; i < regions.size(); i++) {
    EXPECT_GT(regions[i].end_ns, regions[i].begin_ns) << i;
    if (i) { EXPECT_GE(regions[i].begin_ns, regions[i - 1].end_ns) << i; }
  }
  auto summary = prof.summary();
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_NE(prof.table().find("first"), std::string::npos);
  EXPECT_EQ(prof.to_json().size(), 2u);
}
