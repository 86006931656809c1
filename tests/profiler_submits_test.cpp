// A profiler collecting over several submits: each submit's queries resolve to a 256-aligned
// offset, so any number of regions per submit works and collect() returns exactly them.
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu/profiler.h"
#include "gpu/recorder.h"
#include "gpu_fixture.h"

using namespace ember;

namespace {
std::string region_name(int submit, int dispatch) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "s%d.%d", submit, dispatch);
  return buf;
}
}  // namespace

TEST(GpuProfilerSubmits, RegionsOfSeveralSubmitsComeBackInOrder) {
  auto& device = test::test_device();
  auto& kernels = test::test_kernels();
  gpu::Buffer words = device.create_storage(64 * 4, "words");
  const gpu::Kernel& touch = kernels.get({.file = "touch.wgsl"});
  gpu::BindGroup group = kernels.bind(touch, {{&words}});
  gpu::Profiler prof(device, 256);
  for (int s = 0; s < 5; s++) {
    gpu::Recorder rec(device, &prof);
    for (int i = 0; i < 3; i++) rec.dispatch(touch, group, 1, 1, 1, region_name(s, i));
    rec.submit();
  }
  auto regions = prof.collect();
  ASSERT_EQ(regions.size(), 15u);
  for (int s = 0; s < 5; s++)
    for (int i = 0; i < 3; i++) EXPECT_EQ(regions[s * 3 + i].name, region_name(s, i));
  for (const auto& r : regions) EXPECT_GE(r.end_ns, r.begin_ns);
}

// A recorder told to leave a region out records every other dispatch and not that one: what the
// decode profile relies on to time a step without one kernel.
TEST(GpuProfilerSubmits, LeftOutRegionIsNotRecorded) {
  auto& device = test::test_device();
  auto& kernels = test::test_kernels();
  gpu::Buffer a = device.create_storage(64 * 4, "left_out.a"), b = device.create_storage(64 * 4, "left_out.b");
  device.upload(a, std::span<const uint32_t>(std::vector<uint32_t>(64, 0)));
  device.upload(b, std::span<const uint32_t>(std::vector<uint32_t>(64, 0)));
  const gpu::Kernel& touch = kernels.get({.file = "touch.wgsl"});
  gpu::BindGroup ga = kernels.bind(touch, {{&a}}), gb = kernels.bind(touch, {{&b}});
  gpu::Profiler prof(device, 16);
  gpu::Recorder rec(device, &prof, gpu::Recorder::Timing::WholeSubmit);
  rec.leave_out("touch.b");
  for (int i = 0; i < 3; i++) {
    rec.dispatch(touch, ga, 1, 1, 1, "touch.a");
    rec.dispatch(touch, gb, 1, 1, 1, "touch.b");
  }
  rec.dispatch(touch, gb, 1);  // under the kernel's own label: recorded
  rec.submit();
  EXPECT_EQ(rec.dispatches(), 7u) << "left-out dispatches still count as the graph's";
  EXPECT_EQ(device.download_as<uint32_t>(a), std::vector<uint32_t>(64, 3));
  EXPECT_EQ(device.download_as<uint32_t>(b), std::vector<uint32_t>(64, 1));
  ASSERT_EQ(prof.collect().size(), 1u) << "one region for the whole submit";
}
