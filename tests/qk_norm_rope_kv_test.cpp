// qk_norm_rope_kv.wgsl against the CPU reference composition (per-head RMSNorm of q and k, RoPE,
// KV-cache append) on fresh random data: several head counts and dims, padding, T > 1 at an
// offset start, both reductions; q/k rewritten in place, v left alone, other cache rows kept.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "kernel_test_util.h"
#include "kernels/qk_norm_rope_kv.h"
#include "kernels/step.h"
#include "reference/llm_ops_reference.h"

using namespace ember;

namespace {

struct Case {
  uint32_t heads, kv_heads, d, padding, T, start;
  kernels::Reduction reduction;
};

void check(const Case& c, uint32_t seed) {
  auto& dev = test::test_device();
  const uint32_t half = c.d / 2, positions = c.start + c.T + 3, row = c.d + c.padding;
  const uint32_t extra = 5;  // elements after v in each token row (a stride wider than q|k|v)
  const uint32_t stride = (c.heads + 2 * c.kv_heads) * c.d + extra;
  std::vector<float> cos(size_t(positions) * half), sin(cos.size());
  for (uint32_t p = 0; p < positions; p++)
    for (uint32_t i = 0; i < half; i++) {
      double a = p * std::pow(1e4, -2.0 * i / c.d);
      cos[size_t(p) * half + i] = float(std::cos(a));
      sin[size_t(p) * half + i] = float(std::sin(a));
    }
  auto qkv = test::random_floats(size_t(c.T) * stride, seed, 3.0f);
  auto qw = test::random_floats(c.d, seed + 1), kw = test::random_floats(c.d, seed + 2);
  auto kc0 = test::random_floats(size_t(positions) * c.kv_heads * row, seed + 3);
  auto vc0 = test::random_floats(kc0.size(), seed + 4);
  const float eps = 1e-5f;

  // Reference: norm each q/k head, rotate, then append k and v.
  auto ref = qkv;
  auto kref = kc0, vref = vc0;
  for (uint32_t t = 0; t < c.T; t++) {
    float* tok = &ref[size_t(t) * stride];
    for (uint32_t h = 0; h < c.heads + c.kv_heads; h++) {
      std::vector<float> head(tok + h * c.d, tok + (h + 1) * c.d);
      head = reference::rmsnorm(head, h < c.heads ? qw : kw, 1, c.d, eps);
      reference::rope(head, 1, 1, c.d, c.start + t, cos, sin);
      std::copy(head.begin(), head.end(), tok + h * c.d);
    }
    for (uint32_t h = 0; h < c.kv_heads; h++)
      for (uint32_t i = 0; i < c.d; i++) {
        size_t dst = (size_t(c.start + t) * c.kv_heads + h) * row + i;
        kref[dst] = tok[(c.heads + h) * c.d + i];
        vref[dst] = tok[(c.heads + c.kv_heads + h) * c.d + i];
      }
  }

  auto qkvb = test::buffer_from(qkv, "qkv");
  auto qwb = test::buffer_from(qw, "q_norm"), kwb = test::buffer_from(kw, "k_norm");
  auto cb = test::buffer_from(cos, "cos"), sb = test::buffer_from(sin, "sin");
  auto kcb = test::buffer_from(kc0, "k cache"), vcb = test::buffer_from(vc0, "v cache");
  auto step = kernels::create_step_buffer(dev);
  kernels::upload_step(dev, step, {.start = c.start, .rows = c.T});
  kernels::QkNormRopeKv op(test::test_kernels(), {.heads = c.heads, .kv_heads = c.kv_heads, .head_dim = c.d, .padding = c.padding,
                                                  .stride = stride, .eps = eps, .reduction = c.reduction});
  auto g = op.bind({&qkvb}, {&qwb}, {&kwb}, {&cb}, {&sb}, {&kcb}, {&vcb}, {&step});
  gpu::Recorder rec(dev);
  op.record(rec, g, c.T);
  rec.submit();
  const std::string what = "heads " + std::to_string(c.heads) + "/" + std::to_string(c.kv_heads) + " d " + std::to_string(c.d) + " T " +
                           std::to_string(c.T) + " start " + std::to_string(c.start);
  EXPECT_LT(test::rel_l2(test::read_floats(qkvb, qkv.size()), ref), test::kF32Tolerance) << what;
  EXPECT_LT(test::rel_l2(test::read_floats(kcb, kref.size()), kref), test::kF32Tolerance) << what;
  // v is copied exactly; every cache element outside the written rows is untouched.
  EXPECT_EQ(test::read_floats(vcb, vref.size()), vref) << what;
  auto kgot = test::read_floats(kcb, kref.size());
  for (size_t i = 0; i < kref.size(); i++) {
    size_t pos = i / (size_t(c.kv_heads) * row);
    if (pos < c.start || pos >= c.start + c.T || i % row >= c.d) {
      ASSERT_EQ(kgot[i], kc0[i]) << what << " element " << i;
    }
  }
}

}  // namespace

TEST(QkNormRopeKv, MatchesReferenceComposition) {
  uint32_t seed = 500;
  for (auto r : {kernels::Reduction::best, kernels::Reduction::shared})
    for (const Case& c : {Case{4, 2, 64, 0, 1, 0, r}, Case{16, 8, 64, 0, 1, 37, r}, Case{3, 1, 32, 3, 5, 6, r}, Case{2, 2, 160, 1, 2, 9, r},
                          Case{1, 1, 2, 0, 3, 0, r}})
      check(c, seed++);
}

TEST(QkNormRopeKv, BadShapesAreClearErrors) {
  auto& k = test::test_kernels();
  EXPECT_THROW(kernels::QkNormRopeKv(k, {.heads = 4, .kv_heads = 2, .head_dim = 63}), Error);
  EXPECT_THROW(kernels::QkNormRopeKv(k, {.heads = 0, .kv_heads = 2, .head_dim = 64}), Error);
  EXPECT_THROW(kernels::QkNormRopeKv(k, {.heads = 4, .kv_heads = 2, .head_dim = 64, .workgroup = 48}), Error);
  EXPECT_THROW(kernels::QkNormRopeKv(k, {.heads = 4, .kv_heads = 2, .head_dim = 64, .eps = 0.0f}), Error);
}
