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
