// Proves our own declarations of Dawn's C API (src/gpu/webgpu_api.h) against the real build:
// each feature number is requested and then observed to do what the feature does.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "gpu_fixture.h"

using namespace ember;

namespace {

// Compiles `wgsl` as a one-file kernel on `device`; returns the error text or "" on success.
std::string try_compile(const gpu::Device& device, const std::string& wgsl) {
  WGPUShaderSourceWGSL src{};
  src.chain.sType = WGPUSType_ShaderSourceWGSL;
  src.code = {wgsl.data(), wgsl.size()};
  WGPUShaderModuleDescriptor md{};
  md.nextInChain = &src.chain;
  try {
    device.scoped("abi test shader", [&] {
      WGPUShaderModule m = wgpuDeviceCreateShaderModule(device.get(), &md);
      WGPUComputePipelineDescriptor pd{};
      pd.compute.module = m;
      pd.compute.entryPoint = {"main", 4};
      WGPUComputePipeline p = wgpuDeviceCreateComputePipeline(device.get(), &pd);
      if (p) wgpuComputePipelineRelease(p);
      wgpuShaderModuleRelease(m);
    });
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const char* kF16Shader = R"(enable f16;
@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1) fn main() { let h: f16 = 1.5h; o[0] = f32(h); })";

const char* kSubgroupShader = R"(enable subgroups;
@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(32) fn main(@builtin(subgroup_size) s: u32) { o[0] = subgroupAdd(f32(s)); })";

}  // namespace

TEST(GpuAbi, AdapterInfoAndLimitsAreRead) {
  const auto& d = test::test_device().adapter();
  EXPECT_FALSE(d.vendor.empty());
  EXPECT_FALSE(d.backend.empty());
  EXPECT_NE(d.backend, "Null");
  EXPECT_GT(d.subgroup_min, 0u);
  EXPECT_GE(d.subgroup_max, d.subgroup_min);
  EXPECT_GE(d.limits.maxStorageBufferBindingSize, 128ull << 20);
  EXPECT_GE(d.limits.maxBufferSize, d.limits.maxStorageBufferBindingSize);
  EXPECT_GE(d.limits.maxComputeInvocationsPerWorkgroup, 256u);
  EXPECT_GE(d.limits.maxComputeWorkgroupStorageSize, 16384u);
  EXPECT_LE(d.limits.minStorageBufferOffsetAlignment, 256u);  // the packs' 256-byte alignment always binds
  // The device received the adapter's limits, not WebGPU's defaults.
  EXPECT_EQ(test::test_device().limits().maxStorageBufferBindingSize, d.limits.maxStorageBufferBindingSize);
}

TEST(GpuAbi, TimestampQueryNumberEnablesTimestamps) {
  gpu::Device& with = test::test_device();
  ASSERT_TRUE(with.adapter().timestamp_query) << "the CI adapter (lavapipe) offers timestamp-query";
  ASSERT_TRUE(with.has_timestamps());
  EXPECT_NO_THROW(gpu::Profiler(with, 4));

  gpu::Device without = gpu::Device::open({.without = {"timestamp-query"}});
  EXPECT_FALSE(without.has_timestamps());
  WGPUQuerySetDescriptor qd{};
  qd.type = WGPUQueryType_Timestamp;
  qd.count = 2;
  EXPECT_THROW(without.scoped("query set without the feature", [&] {
    WGPUQuerySet q = wgpuDeviceCreateQuerySet(without.get(), &qd);
    if (q) wgpuQuerySetRelease(q);
  }), Error);
}

// Dawn rounds timestamps to 65,536 ns unless timestamp_quantization is off (DeviceOptions::
// profiling); the profiler refuses a rounded device, and an exact one reads durations off that grid.
TEST(GpuAbi, ProfilerNeedsExactTimestamps) {
  gpu::Device rounded = gpu::Device::open({});
  EXPECT_FALSE(rounded.exact_timestamps());
  EXPECT_THROW(gpu::Profiler(rounded, 4), Error);

  gpu::Device& exact = test::test_device();
  ASSERT_TRUE(exact.exact_timestamps());
  gpu::Buffer data = exact.create_storage(4096, "exact.data");
  gpu::Buffer sink = exact.create_storage(4 * 256 * 4, "exact.sink");
  const gpu::Kernel& k = test::test_kernels().get({.file = "read_bandwidth.wgsl", .constants = {{"WG", 256}}});
  gpu::BindGroup g = test::test_kernels().bind(k, {{&data}, {&sink}});
  gpu::Profiler profiler(exact, 8);
  gpu::Recorder rec(exact, &profiler, gpu::Recorder::Timing::PerDispatch);
  for (int i = 0; i < 8; i++) rec.dispatch(k, g, 4, 1, 1, "exact.read");
  rec.submit();
  auto regions = profiler.collect();
  ASSERT_EQ(regions.size(), 8u);
  EXPECT_TRUE(std::any_of(regions.begin(), regions.end(), [](const auto& r) { return (r.end_ns - r.begin_ns) % 65536 != 0; }));
}

TEST(GpuAbi, ShaderF16NumberEnablesF16) {
  gpu::Device& with = test::test_device();
  ASSERT_TRUE(with.has_f16()) << "lavapipe offers shader-f16";
  EXPECT_EQ(try_compile(with, kF16Shader), "");
  gpu::Device without = gpu::Device::open({.without = {"shader-f16"}});
  EXPECT_FALSE(without.has_f16());
  EXPECT_NE(try_compile(without, kF16Shader), "");
}

TEST(GpuAbi, SubgroupsNumberEnablesSubgroups) {
  gpu::Device& with = test::test_device();
  ASSERT_TRUE(with.has_subgroups());
  EXPECT_EQ(try_compile(with, kSubgroupShader), "");
  gpu::Device without = gpu::Device::open({.without = {"subgroups"}});
  EXPECT_FALSE(without.has_subgroups());
  EXPECT_NE(try_compile(without, kSubgroupShader), "");
}

TEST(GpuAbi, FeatureListNamesMatchHasFeature) {
  const auto& d = test::test_device().adapter();
  auto listed = [&](const std::string& n) { return std::find(d.features.begin(), d.features.end(), n) != d.features.end(); };
  EXPECT_EQ(listed("shader-f16"), d.shader_f16);
  EXPECT_EQ(listed("subgroups"), d.subgroups);
  EXPECT_EQ(listed("timestamp-query"), d.timestamp_query);
  EXPECT_TRUE(listed("core-features-and-limits")) << "Dawn adds it to every core adapter";
}

TEST(GpuAbi, TogglesAreAccepted) {
  // skip_validation + exact timestamps, and Dawn's bounds checks back on: each device opens and
  // moves data (the tests' own device, bounds checks off and exact timestamps, runs every other
  // test).
  for (const gpu::DeviceOptions& options : {gpu::DeviceOptions{.fast = true, .profiling = true}, gpu::DeviceOptions{.bounds_checks = true}}) {
    gpu::Device device = gpu::Device::open(options);
    gpu::Buffer b = device.create_storage(64, "toggles.buffer");
    std::vector<uint32_t> v(16, 7);
    device.upload(b, std::span<const uint32_t>(v));
    EXPECT_EQ(device.download_as<uint32_t>(b), v);
  }
}
