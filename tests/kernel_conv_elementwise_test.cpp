// LFM2 short conv (fused and unfused, state carried across prefill and decode steps), silu * up
// and the residual add against the CPU reference.
#include <gtest/gtest.h>

#include "kernel_test_util.h"
#include "kernels/lfm2/conv.h"
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

// Batched decode: one fused dispatch steps the sequences listed in the step entries (out of
// order, slot 1 skipped), each on its own input/output row and its state slot at state_stride.
TEST(ShortConv, StepsSeveralSequencesInOneDispatch) {
  auto& dev = test_device();
  const uint32_t hidden = 100, slots = 4, stride = 2 * hidden + 56;
  kernels::ShortConv conv(test_kernels(), {.hidden = hidden, .state_stride = stride, .fused = true});
  auto taps = test::random_floats(size_t(hidden) * 3, 1);
  auto in = test::random_floats(size_t(slots) * 3 * hidden, 2);
  auto states = test::random_floats(size_t(slots) * stride, 3);
  auto tb = test::buffer_from(taps, "taps"), ib = test::buffer_from(in, "in"), sb = test::buffer_from(states, "states");
  auto out = test::poisoned(size_t(slots) * hidden, "out");
  const std::vector<uint32_t> seqs{3, 0, 2};
  std::vector<kernels::StepParams> entries;
  for (uint32_t s : seqs) entries.push_back({.start = 10 + s, .rows = 1, .seq = s});
  auto steps = dev.create_storage(entries.size() * sizeof(kernels::StepParams), "steps");
  kernels::upload_steps(dev, steps, entries);
  auto g = conv.bind({&ib}, {&tb}, {&sb}, {&out}, {&steps});
  gpu::Recorder rec(dev);
  conv.record(rec, g, 1, static_cast<uint32_t>(seqs.size()));
  rec.submit();
  auto got = test::read_floats(out, size_t(slots) * hidden);
  auto got_states = test::read_floats(sb, states.size());
  for (uint32_t s = 0; s < slots; s++) {
    std::vector<float> x(in.begin() + size_t(s) * 3 * hidden, in.begin() + size_t(s + 1) * 3 * hidden);
    std::vector<float> state(states.begin() + size_t(s) * stride, states.begin() + size_t(s) * stride + 2 * hidden);
    std::vector<float> y(got.begin() + size_t(s) * hidden, got.begin() + size_t(s + 1) * hidden);
    std::vector<float> new_state(got_states.begin() + size_t(s) * stride, got_states.begin() + size_t(s) * stride + 2 * hidden);
    if (s == 1) {  // not stepped: output and state untouched
      EXPECT_EQ(y, std::vector<float>(hidden, test::kPoison));
      EXPECT_EQ(new_state, state);
      continue;
    }
    auto ref = reference::short_conv(x, taps, state, 1, hidden);
    EXPECT_LT(test::rel_l2(y, ref), test::kF32Tolerance) << "sequence " << s;
    EXPECT_LT(test::rel_l2(new_state, state), test::kF32Tolerance) << "state of sequence " << s;
  }
  // The padding between state slots is never written.
  for (uint32_t s = 0; s < slots; s++)
    for (uint32_t e = 2 * hidden; e < stride; e++) ASSERT_EQ(got_states[size_t(s) * stride + e], states[size_t(s) * stride + e]);
}

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
