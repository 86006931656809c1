// RMSNorm kernels (plain and per-head, in place and out of place, subgroup and shared) against the
// CPU reference.
#include <gtest/gtest.h>

#include "kernel_test_util.h"
#include "kernels/rmsnorm.h"
#include "reference/llm_ops_reference.h"

using namespace ember;
using test::test_device;
using test::test_kernels;

class RmsNormTest : public ::testing::TestWithParam<std::tuple<bool, uint32_t>> {};

TEST_P(RmsNormTest, PlainMatchesReference) {
  auto [subgroups, wg] = GetParam();
  if (subgroups && !test_device().has_subgroups()) GTEST_SKIP() << "no subgroups";
  uint32_t seed = 10;
  for (auto [T, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 96}, {5, 100}, {3, 1024}, {7, 1}}) {
    auto x = test::random_floats(size_t(T) * cols, seed++, 2.0f);
    auto w = test::random_floats(cols, seed++);
    const float eps = cols == 1 ? 1e-3f : 1e-5f;
    kernels::RmsNorm norm(test_kernels(), {.cols = cols, .eps = eps, .subgroups = subgroups, .workgroup = wg});
    auto xb = test::buffer_from(x, "x"), wb = test::buffer_from(w, "w");
    auto ob = test::poisoned(x.size(), "out");
    auto g = norm.bind({&xb}, {&wb}, {&ob});
    gpu::Recorder rec(test_device());
    norm.record(rec, g, T);
    rec.submit();
    auto ref = reference::rmsnorm(x, w, T, cols, eps);
    EXPECT_LT(test::rel_l2(test::read_floats(ob, x.size()), ref), test::kF32Tolerance) << T << "x" << cols;
  }
}

TEST_P(RmsNormTest, PerHeadInPlaceInsideQkvRows) {
  // q and k norms applied in place to a fused [T][(H + 2 KV) * d] qkv tensor; v must be untouched.
  auto [subgroups, wg] = GetParam();
  if (subgroups && !test_device().has_subgroups()) GTEST_SKIP() << "no subgroups";
  for (auto [H, KV, d] : std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>{{4, 2, 32}, {4, 2, 64}, {3, 1, 100}}) {
    const uint32_t T = 5, row = (H + 2 * KV) * d;
    auto qkv = test::random_floats(size_t(T) * row, H * 7 + d);
    auto wq = test::random_floats(d, 3), wk = test::random_floats(d, 4);
    kernels::RmsNorm qn(test_kernels(), {.cols = d, .heads = H, .token_stride = row, .offset = 0, .in_place = true,
                                         .subgroups = subgroups, .workgroup = wg});
    kernels::RmsNorm kn(test_kernels(), {.cols = d, .heads = KV, .token_stride = row, .offset = H * d,
                                         .in_place = true, .subgroups = subgroups, .workgroup = wg});
    auto b = test::buffer_from(qkv, "qkv"), wqb = test::buffer_from(wq, "wq"), wkb = test::buffer_from(wk, "wk");
    auto gq = qn.bind({&b}, {&wqb}), gk = kn.bind({&b}, {&wkb});
    gpu::Recorder rec(test_device());
    qn.record(rec, gq, T);
    kn.record(rec, gk, T);
    rec.submit();
    auto got = test::read_floats(b, qkv.size());
    std::vector<float> q, k, gq_, gk_, v, gv;
    for (uint32_t t = 0; t < T; t++) {
      auto r = qkv.begin() + size_t(t) * row;
      auto s = got.begin() + size_t(t) * row;
      q.insert(q.end(), r, r + H * d);
      k.insert(k.end(), r + H * d, r + (H + KV) * d);
      v.insert(v.end(), r + (H + KV) * d, r + row);
      gq_.insert(gq_.end(), s, s + H * d);
      gk_.insert(gk_.end(), s + H * d, s + (H + KV) * d);
      gv.insert(gv.end(), s + (H + KV) * d, s + row);
    }
    EXPECT_LT(test::rel_l2(gq_, reference::rmsnorm(q, wq, T * H, d, 1e-5f)), test::kF32Tolerance) << d;
    EXPECT_LT(test::rel_l2(gk_, reference::rmsnorm(k, wk, T * KV, d, 1e-5f)), test::kF32Tolerance) << d;
    EXPECT_EQ(gv, v);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, RmsNormTest, ::testing::Combine(::testing::Bool(), ::testing::Values(32u, 256u)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "subgroup" : "shared") + "_wg" +
                                  std::to_string(std::get<1>(info.param));
                         });
