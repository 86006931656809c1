// matvec_q4.wgsl's argmax epilogue (the decode head writing the sampler's greedy partials): each
// workgroup's (value, index) is the best of its rows of the y it wrote, over the first `rows`
// candidates, ties to the lower index, and the sampler's greedy pick over those partials is the
// argmax of y; y itself still matches the CPU reference. Several uses of one binding, every
// variant, prefetch workgroups (which write no partial), a 2D grid (whose spare workgroups write
// none either) and a candidate limit below the matrix's rows.
#include <gtest/gtest.h>

#include <cstring>

#include "common/error.h"
#include "gpu/recorder.h"
#include "kernels/matvec_q4.h"
#include "kernels/sampler.h"
#include "q4_gpu.h"
#include "reference/llm_ops_reference.h"

using namespace ember;
using kernels::MatvecGeometry;

namespace {

// The greedy pick's rule (sampler_common.wgsl `better`): the highest value, ties to the lower index.
uint32_t expected_pick(const std::vector<float>& y, uint32_t rows) {
  uint32_t best = 0;
  for (uint32_t r = 1; r < rows; r++)
    if (y[r] > y[best]) best = r;
  return best;
}

struct Case {
  kernels::Q4Variant variant;
  MatvecGeometry geometry;
  uint32_t rows, cols, candidates;
  bool prefetch = false;
  uint32_t max_per_dim = 0;  // 0: the device's limit
};

void run_case(const Case& c, uint32_t seed) {
  auto& dev = test::test_device();
  auto wf = test::random_floats(size_t(c.rows) * c.cols, seed);
  // Rows 3 and rows - 2 identical and scaled up: usually the largest, always a tie.
  const uint32_t a = 3, b = c.rows - 2;
  for (uint32_t k = 0; k < c.cols; k++) {
    wf[size_t(a) * c.cols + k] *= 3.0f;
    wf[size_t(b) * c.cols + k] = wf[size_t(a) * c.cols + k];
  }
  auto host = reference::quantize_q4_asymmetric(wf, c.rows, c.cols);
  auto w = test::upload_q4(host);
  auto next = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(size_t(64) * c.cols, seed + 1), 64, c.cols), "next");
  gpu::Buffer xb = test::upload_floats(std::vector<float>(c.cols, 0.0f), "x");
  gpu::Buffer yb = test::upload_floats(std::vector<float>(c.rows, test::kPoison), "y");
  kernels::MatvecQ4 mv(test::test_kernels(), {.rows = c.rows,
                                              .cols = c.cols,
                                              .asymmetric = true,
                                              .variant = c.variant,
                                              .geometry = c.geometry,
                                              .prefetch = c.prefetch,
                                              .argmax = true,
                                              .max_workgroups_per_dim = c.max_per_dim});
  const uint32_t P = mv.argmax_partials();
  gpu::Buffer partials = test::upload_floats(std::vector<float>(size_t(P) * 2 + 2, test::kPoison), "partials");
  kernels::ArgmaxOutput out{{&partials}, c.candidates};
  auto bound = mv.bind(w.matrix, {&xb}, {&yb}, {}, {}, {}, c.prefetch ? &next.matrix : nullptr, &out);
  // The sampler's pick over them writes tokens[out_slot].
  kernels::Sampler sampler(test::test_kernels(), {.vocab = c.candidates, .partials = 1});
  gpu::Buffer ids = dev.create_storage(64 * 4, "ids");
  gpu::Buffer params = dev.create_storage(sizeof(kernels::SamplerParams), "params");
  auto pick = sampler.bind_greedy_pick({&partials}, P, {&ids}, {&params});
  const auto deq = reference::dequantize_q4(host);
  for (uint32_t use = 0; use < 5; use++) {
    auto x = test::random_floats(c.cols, seed + 10 + use);
    if (use == 4) x.assign(c.cols, 0.0f);  // every y zero: the lowest index wins
    dev.upload(xb, std::span<const float>(x));
    const uint32_t slot = 7 * use + 1;
    kernels::upload_params(dev, params, {.vocab = c.candidates, .temperature = 0, .out_slot = slot});
    dev.upload(ids, std::span<const uint32_t>(std::vector<uint32_t>(64, 0xdeadbeefu)));
    gpu::Recorder rec(dev);
    mv.record(rec, bound);
    sampler.record(rec, pick);
    rec.submit();
    const auto y = dev.download_as<float>(yb);
    EXPECT_LT(test::rel_l2(y, reference::matvec(deq, c.rows, c.cols, x)), test::kF32Tolerance) << "use " << use;
    const auto got = dev.download_as<float>(partials);
    const uint32_t per_wg = c.geometry.rows_per_workgroup();
    for (uint32_t g = 0; g < P; g++) {
      const uint32_t first = g * per_wg, end = std::min(c.candidates, first + per_wg);
      uint32_t want = 0xffffffffu;
      for (uint32_t r = first; r < end; r++)
        if (want == 0xffffffffu || y[r] > y[want]) want = r;
      uint32_t id;
      std::memcpy(&id, &got[2 * g + 1], 4);
      ASSERT_EQ(id, want) << "partial " << g << ", use " << use;
      if (want != 0xffffffffu) {
        EXPECT_EQ(got[2 * g], y[want]) << "partial " << g << ", use " << use;
      }
    }
    EXPECT_EQ(got[2 * P], test::kPoison) << "a workgroup past the rows wrote a partial";
    const auto picked = dev.download_as<uint32_t>(ids);
    for (uint32_t i = 0; i < 64; i++) EXPECT_EQ(picked[i], i == slot ? expected_pick(y, c.candidates) : 0xdeadbeefu) << "ids[" << i << "], use " << use;
  }
}

}  // namespace

TEST(MatvecQ4Argmax, PicksTheLargestOverSeveralUses) {
  uint32_t seed = 1300;
  for (auto v : {kernels::Q4Variant::carried, kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::shared_x}) {
    SCOPED_TRACE(kernels::q4_variant_name(v));
    run_case({v, {64, 8, 2, 1}, 1000, 64, 1000}, seed++);
  }
}

TEST(MatvecQ4Argmax, PrefetchWorkgroupsTwoDimensionsAndFewerCandidates) {
  {
    SCOPED_TRACE("prefetch");
    run_case({kernels::Q4Variant::shared_x, {128, 16, 1, 2}, 700, 96, 700, true}, 1400);
  }
  {
    SCOPED_TRACE("2D grid, a workgroup that is not a power of two");
    run_case({kernels::Q4Variant::v3_both, {96, 32, 1, 1}, 501, 64, 501, false, 16}, 1401);
  }
  {
    SCOPED_TRACE("candidates below the rows (the tied rows' second copy is not a candidate)");
    run_case({kernels::Q4Variant::shared_x, {64, 8, 1, 1}, 300, 64, 290}, 1402);
  }
}

TEST(MatvecQ4Argmax, RejectsWhatItCannotPick) {
  auto& k = test::test_kernels();
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 64, .cols = 64, .mode = kernels::OutputMode::accumulate, .argmax = true}), Error);
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 64, .cols = 64, .gated = true, .argmax = true}), Error);
  kernels::MatvecQ4 mv(k, {.rows = 64, .cols = 64, .argmax = true});
  auto w = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(64 * 64, 5), 64, 64));
  gpu::Buffer x = test::upload_floats(std::vector<float>(64, 1.0f), "x"), y = test::upload_floats(std::vector<float>(64, 0.0f), "y");
  EXPECT_THROW(mv.bind(w.matrix, {&x}, {&y}), Error);  // no outputs for the pick
  auto& dev = test::test_device();
  gpu::Buffer partials = dev.create_storage(uint64_t(mv.argmax_partials()) * 8, "partials");
  kernels::ArgmaxOutput too_many{{&partials}, 65};
  EXPECT_THROW(mv.bind(w.matrix, {&x}, {&y}, {}, {}, {}, nullptr, &too_many), Error);
}
