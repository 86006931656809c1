// LFM2 short conv (fused and unfused, state carried across prefill and decode steps), silu * up
// and the residual add against the CPU reference.
#include <gtest/gtest.h>

#include "kernel_test_util.h"
#include "kernels/conv.h"
#include "kernels/elementwise.h"
#include "kernels/step.h"
#include "reference/llm_ops_reference.h"

using namespace ember;
using test::test_device;
using test::test_kernels;

class ShortConvTest : public ::testing::TestWithParam<bool> {};

TEST_P(ShortConvTest, StateCarriesAcrossPrefillAndDecodeSteps) {
  const bool fused = GetParam();
  auto& dev = test_device();
  for (uint32_t hidden : {96u, 100u}) {
    kernels::ShortConv conv(test_kernels(), {.hidden = hidden, .fused = fused});
    auto taps = test::random_floats(size_t(hidden) * 3, hidden);
    auto tb = test::buffer_from(taps, "taps");
    auto state = test::buffer_from(std::vector<float>(size_t(hidden) * 2, 0.0f), "state");
    std::vector<float> ref_state(size_t(hidden) * 2, 0.0f);
    auto step = kernels::create_step_buffer(dev);
    uint32_t seed = hidden;
    uint32_t pos = 0;
    for (uint32_t T : {5u, 1u, 1u, 1u, 7u, 1u}) {
      auto in = test::random_floats(size_t(T) * 3 * hidden, seed++);
      auto ib = test::buffer_from(in, "in_proj out");
      auto out = test::poisoned(size_t(T) * hidden, "out");
      auto g = conv.bind({&ib}, {&tb}, {&state}, {&out}, {&step});
      kernels::upload_step(dev, step, {.start = pos, .rows = T});
      gpu::Recorder rec(dev);
      conv.record(rec, g, T);
      rec.submit();
      auto ref = reference::short_conv(in, taps, ref_state, T, hidden);
      EXPECT_LT(test::rel_l2(test::read_floats(out, ref.size()), ref), test::kF32Tolerance) << hidden << " T " << T;
      EXPECT_LT(test::rel_l2(test::read_floats(state, ref_state.size()), ref_state), test::kF32Tolerance);
      pos += T;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, ShortConvTest, ::testing::Bool(),
                         [](const auto& info) { return std::string(info.param ? "fused" : "unfused"); });

TEST(SiluMul, MatchesReference) {
  for (auto [T, ffn] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 100}, {3, 257}, {6, 96}}) {
    auto gu = test::random_floats(size_t(T) * 2 * ffn, ffn + T, 3.0f);
    auto gb = test::buffer_from(gu, "gate_up");
    auto out = test::poisoned(size_t(T) * ffn, "out");
    kernels::SiluMul op(test_kernels(), {.ffn = ffn});
    auto g = op.bind({&gb}, {&out});
    gpu::Recorder rec(test_device());
    op.record(rec, g, T);
    rec.submit();
    auto ref = reference::silu_mul(gu, T, ffn);
    EXPECT_LT(test::rel_l2(test::read_floats(out, ref.size()), ref), test::kF32Tolerance) << T << "x" << ffn;
  }
}

TEST(ResidualAdd, AddsInPlace) {
  const uint32_t T = 4, cols = 100;
  auto x = test::random_floats(size_t(T) * cols, 1), y = test::random_floats(x.size(), 2);
  auto xb = test::buffer_from(x, "x"), yb = test::buffer_from(y, "y");
  kernels::ResidualAdd op(test_kernels(), {.cols = cols, .workgroup = 64});
  auto g = op.bind({&xb}, {&yb});
  gpu::Recorder rec(test_device());
  op.record(rec, g, T);
  rec.submit();
  std::vector<float> ref(x.size());
  for (size_t i = 0; i < x.size(); i++) ref[i] = x[i] + y[i];
  EXPECT_EQ(test::read_floats(xb, ref.size()), ref);
}
