// Bad kernel configurations are clear ember::Errors before anything reaches the GPU.
#include <gtest/gtest.h>

#include "common/error.h"
#include "gpu_fixture.h"
#include "kernels/attention.h"
#include "kernels/lfm2/conv.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/sampler.h"

using namespace ember;
using test::test_kernels;

namespace {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(KernelConfigErrors, NameTheKernelAndTheProblem) {
  auto& k = test_kernels();
  EXPECT_NE(error_of([&] { kernels::RmsNorm(k, {.cols = 64, .workgroup = 96}); }).find("RmsNorm"), std::string::npos);
  EXPECT_NE(error_of([&] { kernels::RmsNorm(k, {.cols = 0}); }).find("cols"), std::string::npos);
  EXPECT_NE(error_of([&] { kernels::Rope(k, {.heads = 4, .kv_heads = 2, .head_dim = 33}); }).find("even"),
            std::string::npos);
  EXPECT_NE(error_of([&] { kernels::AttentionDecode(k, {.heads = 6, .kv_heads = 4, .head_dim = 64}); })
                .find("multiple of kv_heads"),
            std::string::npos);
  if (test::test_device().has_subgroups()) {  // the quad kernel's one-block width: a power of two >= the tile workgroup
    for (uint32_t w : {96u, 32u, 4096u})
      EXPECT_NE(error_of([&] { kernels::AttentionDecode(k, {.heads = 4, .kv_heads = 2, .head_dim = 64, .subgroups = true, .direct_workgroup = w}); })
                    .find("direct_workgroup"),
                std::string::npos)
          << w;
  }
  EXPECT_NE(error_of([&] { kernels::AttentionPrefill(k, {.heads = 4, .kv_heads = 2, .head_dim = 64,
                                                         .query_tile = 32, .key_tile = 256}); })
                .find("workgroup memory"),
            std::string::npos);
  EXPECT_NE(error_of([&] { kernels::AttentionPrefill(k, {.heads = 4, .kv_heads = 2, .head_dim = 128}); }).find("head_dim"),
            std::string::npos);
  EXPECT_NE(error_of([&] { kernels::AttentionPrefill(k, {.heads = 4, .kv_heads = 2, .head_dim = 64, .key_tile = 12}); })
                .find("key_tile"),
            std::string::npos);
  if (k.device().has_subgroups() && k.device().subgroup_size() % 4 == 0) {
    EXPECT_NE(error_of([&] { kernels::AttentionPrefill(k, {.heads = 4, .kv_heads = 2, .head_dim = 64, .subgroups = true,
                                                           .query_tile = 6}); })
                  .find("multiple of 4"),
              std::string::npos);
  }
  EXPECT_NE(error_of([&] { kernels::ShortConv(k, {.hidden = 64, .in_stride = 100}); }).find("in_stride"),
            std::string::npos);
  EXPECT_NE(error_of([&] { kernels::Sampler(k, {.vocab = 100, .partials = 4, .max_top_k = 64, .sort_size = 64}); })
                .find("sort_size"),
            std::string::npos);
  EXPECT_NE(error_of([&] { kernels::Sampler(k, {.vocab = 10, .partials = 16}); }).find("partials"), std::string::npos);
  // The one-dispatch greedy pick packs an id into 30 bits.
  EXPECT_NE(error_of([&] { kernels::Sampler(k, {.vocab = 1u << 30, .partials = 4, .one_dispatch_greedy = true}); }).find("2^30"),
            std::string::npos);
}
