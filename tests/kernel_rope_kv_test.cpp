// RoPE and KV-cache writes against the CPU reference; the position comes from the step buffer.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"
#include "kernels/kv_write.h"
#include "kernels/rope.h"
#include "kernels/step.h"
#include "reference/llm_ops_reference.h"

using namespace ember;
using test::test_device;
using test::test_kernels;

namespace {

void rope_tables(uint32_t positions, uint32_t d, std::vector<float>& cos, std::vector<float>& sin) {
  const uint32_t half = d / 2;
  cos.resize(size_t(positions) * half);
  sin.resize(cos.size());
  for (uint32_t p = 0; p < positions; p++)
    for (uint32_t i = 0; i < half; i++) {
      double a = p * std::pow(1e6, -2.0 * i / d);
      cos[size_t(p) * half + i] = float(std::cos(a));
      sin[size_t(p) * half + i] = float(std::sin(a));
    }
}

}  // namespace

TEST(Rope, SeparateQAndKMatchReference) {
  auto& dev = test_device();
  for (uint32_t d : {32u, 64u}) {
    std::vector<float> cos, sin;
    rope_tables(64, d, cos, sin);
    auto cb = test::buffer_from(cos, "cos"), sb = test::buffer_from(sin, "sin");
    const uint32_t H = 4, KV = 2;
    kernels::Rope rope(test_kernels(), {.heads = H, .kv_heads = KV, .head_dim = d});
    auto step = kernels::create_step_buffer(dev);
    for (auto [T, start] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 0}, {5, 0}, {1, 37}, {7, 50}}) {
      auto q = test::random_floats(size_t(T) * H * d, T + start), k = test::random_floats(size_t(T) * KV * d, d);
      auto qb = test::buffer_from(q, "q"), kb = test::buffer_from(k, "k");
      auto g = rope.bind({&qb}, {&kb}, {&cb}, {&sb}, {&step});
      kernels::upload_step(dev, step, {.start = start, .rows = T});
      gpu::Recorder rec(dev);
      rope.record(rec, g, T);
      rec.submit();
      reference::rope(q, T, H, d, start, cos, sin);
      reference::rope(k, T, KV, d, start, cos, sin);
      EXPECT_LT(test::rel_l2(test::read_floats(qb, q.size()), q), test::kF32Tolerance) << d << " " << T << " " << start;
      EXPECT_LT(test::rel_l2(test::read_floats(kb, k.size()), k), test::kF32Tolerance) << d << " " << T << " " << start;
    }
  }
}

TEST(Rope, InPlaceOnFusedQkvLeavesVAlone) {
  auto& dev = test_device();
  const uint32_t H = 4, KV = 2, d = 64, T = 3, start = 9, row = (H + 2 * KV) * d;
  std::vector<float> cos, sin;
  rope_tables(32, d, cos, sin);
  auto cb = test::buffer_from(cos, "cos"), sb = test::buffer_from(sin, "sin");
  auto qkv = test::random_floats(size_t(T) * row, 5);
  auto b = test::buffer_from(qkv, "qkv");
  auto step = kernels::create_step_buffer(dev);
  kernels::upload_step(dev, step, {.start = start, .rows = T});
  kernels::Rope rope(test_kernels(), {.heads = H, .kv_heads = KV, .head_dim = d, .q_stride = row, .q_offset = 0,
                                      .k_stride = row, .k_offset = H * d, .shared_qk = true});
  auto g = rope.bind({&b}, {nullptr}, {&cb}, {&sb}, {&step});
  gpu::Recorder rec(dev);
  rope.record(rec, g, T);
  rec.submit();
  auto got = test::read_floats(b, qkv.size());
  // Reference: rotate the q and k heads of each token row (H + KV heads in a row, then v).
  auto ref = qkv;
  for (uint32_t t = 0; t < T; t++) {
    std::vector<float> qk(ref.begin() + size_t(t) * row, ref.begin() + size_t(t) * row + (H + KV) * d);
    reference::rope(qk, 1, H + KV, d, start + t, cos, sin);
    std::copy(qk.begin(), qk.end(), ref.begin() + size_t(t) * row);
  }
  EXPECT_LT(test::rel_l2(got, ref), test::kF32Tolerance);
  for (uint32_t t = 0; t < T; t++)
    for (uint32_t e = (H + KV) * d; e < row; e++) ASSERT_EQ(got[size_t(t) * row + e], qkv[size_t(t) * row + e]);
}

TEST(KvWrite, WritesRowsAtStepPositionsAndKeepsPaddingAndOtherRows) {
  auto& dev = test_device();
  for (uint32_t padding : {0u, 3u}) {
    const uint32_t KV = 2, d = 32, positions = 20, row = d + padding;
    // Source: a fused qkv tensor with H = 4 query heads in front of k and v.
    const uint32_t H = 4, T = 5, start = 6, stride = (H + 2 * KV) * d;
    auto qkv = test::random_floats(size_t(T) * stride, 7 + padding);
    auto src = test::buffer_from(qkv, "qkv");
    auto kc0 = test::random_floats(size_t(positions) * KV * row, 8), vc0 = test::random_floats(kc0.size(), 9);
    auto kc = test::buffer_from(kc0, "k cache"), vc = test::buffer_from(vc0, "v cache");
    auto step = kernels::create_step_buffer(dev);
    kernels::upload_step(dev, step, {.start = start, .rows = T});
    kernels::KvWrite kw(test_kernels(), {.kv_heads = KV, .head_dim = d, .padding = padding, .k_stride = stride,
                                         .k_offset = H * d, .v_stride = stride, .v_offset = (H + KV) * d});
    auto g = kw.bind({&src}, {&src}, {&kc}, {&vc}, {&step});
    gpu::Recorder rec(dev);
    kw.record(rec, g, T);
    rec.submit();
    auto kref = kc0, vref = vc0;
    for (uint32_t t = 0; t < T; t++)
      for (uint32_t h = 0; h < KV; h++)
        for (uint32_t i = 0; i < d; i++) {
          size_t dst = (size_t(start + t) * KV + h) * row + i;
          kref[dst] = qkv[size_t(t) * stride + H * d + h * d + i];
          vref[dst] = qkv[size_t(t) * stride + (H + KV) * d + h * d + i];
        }
    EXPECT_EQ(test::read_floats(kc, kref.size()), kref);
    EXPECT_EQ(test::read_floats(vc, vref.size()), vref);
  }
}
