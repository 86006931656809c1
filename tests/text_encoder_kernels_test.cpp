// The kernel options the text encoder adds, against tests/reference on random data at awkward
// sizes, outputs poisoned first: the causal mask of the plain flash attention, quick_gelu.
#include <gtest/gtest.h>

#include "common/error.h"
#include "gpu/recorder.h"
#include "gpu_fixture.h"
#include "kernel_test_util.h"
#include "kernels/flash_attention.h"
#include "kernels/flow_elementwise.h"
#include "reference/clip_text_reference.h"

using namespace ember;
using test::test_device;
using test::test_kernels;

namespace {

gpu::Buffer upload(const std::vector<float>& v) { return test::buffer_from(v, "in"); }

std::vector<float> read(const gpu::Buffer& b) { return test_device().download_as<float>(b); }

void run(const kernels::Dispatch& d) {
  gpu::Recorder rec(test_device());
  d.record(rec);
  rec.submit();
}

}  // namespace

TEST(TextEncoderKernels, CausalFlashAttentionMatchesReference) {
  struct Case {
    uint32_t batch, heads, n, queries;
  };
  uint32_t seed = 300;
  for (auto c : {Case{1, 1, 1, 64}, Case{2, 3, 77, 64}, Case{1, 2, 130, 64}, Case{3, 12, 77, 64}, Case{1, 1, 33, 64}}) {
    const uint32_t C = 64 * c.heads, stride = 3 * C;
    auto qkv = test::random_floats(size_t(c.batch) * c.n * stride, seed++, 2.0f);
    std::vector<float> ref;
    for (uint32_t b = 0; b < c.batch; b++) {
      std::vector<float> rows(qkv.begin() + size_t(b) * c.n * stride, qkv.begin() + size_t(b + 1) * c.n * stride);
      auto r = reference::causal_attention(rows, c.n, stride, 0, C, 2 * C, c.heads, 0.125);
      ref.insert(ref.end(), r.begin(), r.end());
    }
    gpu::Buffer in = upload(qkv), out = upload(std::vector<float>(ref.size(), test::kPoison));
    kernels::FlashAttentionArgs a{.q = &in, .kv = &in, .out = &out, .batch = c.batch, .heads = c.heads, .nq = c.n, .nk = c.n,
                                  .q_stride = stride, .q_offset = 0, .kv_stride = stride, .k_offset = C, .v_offset = 2 * C,
                                  .o_stride = C, .scale = 0.125f, .variant = kernels::FlashVariant::Plain,
                                  .queries_per_workgroup = c.queries};
    a.causal = true;
    run(kernels::flash_attention(test_kernels(), a));
    const auto got = read(out);
    EXPECT_LT(test::rel_l2(got, ref), test::kF32Tolerance) << c.batch << "x" << c.heads << " n " << c.n;
    // The first query sees only key 0: its output is v_0 exactly (a mask that let later keys in
    // would move it).
    for (uint32_t h = 0; h < c.heads; h++)
      for (uint32_t d = 0; d < 64; d++) EXPECT_NEAR(got[h * 64 + d], qkv[2 * C + h * 64 + d], 1e-5f) << "head " << h;
  }
}

TEST(TextEncoderKernels, CausalMaskIsRefusedWhereNotImplemented) {
  gpu::Buffer b = upload(std::vector<float>(3 * 64 * 8));
  kernels::FlashAttentionArgs a{.q = &b, .kv = &b, .out = &b, .batch = 1, .heads = 1, .nq = 8, .nk = 8, .q_stride = 192, .q_offset = 0,
                                .kv_stride = 192, .k_offset = 64, .v_offset = 128, .o_stride = 64, .scale = 0.125f,
                                .variant = kernels::FlashVariant::Quad, .queries_per_workgroup = 32};
  a.causal = true;
  if (test_device().has_subgroups()) {
    EXPECT_THROW(kernels::flash_attention(test_kernels(), a), Error);
  }
  a.variant = kernels::FlashVariant::Plain;
  a.nk = 7;
  EXPECT_THROW(kernels::flash_attention(test_kernels(), a), Error);
}

TEST(TextEncoderKernels, QuickGeluMatchesReference) {
  for (int n : {1001, 1000}) {  // scalar; vec4
    auto x = test::random_floats(size_t(n), 91, 4.0f);
    x[0] = 80.0f;  // saturated ends
    x[1] = -80.0f;
    std::vector<float> ref(x.size());
    for (size_t i = 0; i < x.size(); i++) ref[i] = reference::quick_gelu(x[i]);
    gpu::Buffer b = upload(x);
    run(kernels::activation(test_kernels(), kernels::Activation::QuickGelu, b, uint32_t(x.size())));
    EXPECT_LT(test::rel_l2(read(b), ref), test::kF32Tolerance) << n;
  }
}
