// matvec_q4_batch.wgsl against the CPU reference: vector counts from 1 to the compiled maximum,
// symmetric and asymmetric matrices, both output modes, both reductions and lane-group widths
// below, at and above lavapipe's subgroup of 8, on awkward shapes.
#include <gtest/gtest.h>

#include "common/error.h"
#include "gpu/recorder.h"
#include "kernels/matvec_q4_batch.h"
#include "q4_gpu.h"

using namespace ember;

namespace {

struct Case {
  kernels::Reduction reduction;
  uint32_t workgroup, lanes, max_vectors;
};

// Runs the kernel on a fresh random matrix and `vectors` random x; returns rel_l2 against the
// reference over all vectors.
double run_batch(const Case& c, uint32_t rows, uint32_t cols, uint32_t vectors, bool asymmetric, kernels::OutputMode mode,
                 uint32_t seed, uint32_t max_per_dim = 0) {
  auto& dev = test::test_device();
  auto wf = test::random_floats(size_t(rows) * cols, seed);
  auto host = asymmetric ? reference::quantize_q4_asymmetric(wf, rows, cols) : reference::quantize_q4_symmetric(wf, rows, cols);
  auto dense = reference::dequantize_q4(host);
  auto x = test::random_floats(size_t(vectors) * cols, seed + 1000);
  std::vector<float> y0(size_t(vectors) * rows, test::kPoison);
  if (mode == kernels::OutputMode::accumulate) y0 = test::random_floats(size_t(vectors) * rows, seed + 2000);
  std::vector<float> ref;
  for (uint32_t v = 0; v < vectors; v++) {
    auto yv = reference::matvec(dense, rows, cols, std::vector<float>(x.begin() + size_t(v) * cols, x.begin() + size_t(v + 1) * cols));
    for (uint32_t r = 0; r < rows; r++) ref.push_back(yv[r] + (mode == kernels::OutputMode::accumulate ? y0[size_t(v) * rows + r] : 0.0f));
  }
  auto w = test::upload_q4(host);
  gpu::Buffer xb = test::upload_floats(x, "x");
  gpu::Buffer yb = test::upload_floats(y0, "y");
  kernels::MatvecBatchQ4 mv(test::test_kernels(), {.rows = rows,
                                                   .cols = cols,
                                                   .asymmetric = asymmetric,
                                                   .mode = mode,
                                                   .max_vectors = c.max_vectors,
                                                   .workgroup_size = c.workgroup,
                                                   .lanes = c.lanes,
                                                   .reduction = c.reduction,
                                                   .max_workgroups_per_dim = max_per_dim});
  auto bound = mv.bind(w.matrix, {&xb}, {&yb}, vectors);
  gpu::Recorder rec(dev);
  mv.record(rec, bound);
  rec.submit();
  return test::rel_l2(dev.download_as<float>(yb), ref);
}

}  // namespace

class MatvecBatchQ4Test : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (GetParam().reduction == kernels::Reduction::subgroup && !test::test_device().has_subgroups()) GTEST_SKIP() << "no subgroups";
  }
};

TEST_P(MatvecBatchQ4Test, MatchesReferenceForEveryVectorCount) {
  const Case c = GetParam();
  uint32_t seed = 100;
  for (uint32_t vectors : {1u, 2u, 3u, c.max_vectors})
    for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 32}, {33, 96}, {100, 320}}) {
      EXPECT_LT(run_batch(c, rows, cols, vectors, false, kernels::OutputMode::overwrite, seed++), test::kF32Tolerance)
          << rows << "x" << cols << " vectors " << vectors;
      EXPECT_LT(run_batch(c, rows, cols, vectors, true, kernels::OutputMode::overwrite, seed++), test::kF32Tolerance)
          << "asymmetric " << rows << "x" << cols << " vectors " << vectors;
      EXPECT_LT(run_batch(c, rows, cols, vectors, false, kernels::OutputMode::accumulate, seed++), test::kF32Tolerance)
          << "accumulate " << rows << "x" << cols << " vectors " << vectors;
    }
}

INSTANTIATE_TEST_SUITE_P(Geometries, MatvecBatchQ4Test,
                         ::testing::Values(Case{kernels::Reduction::shared, 256, 32, 16}, Case{kernels::Reduction::subgroup, 256, 32, 16},
                                           Case{kernels::Reduction::subgroup, 64, 8, 5}, Case{kernels::Reduction::shared, 64, 16, 5},
                                           Case{kernels::Reduction::subgroup, 128, 64, 8}, Case{kernels::Reduction::subgroup, 32, 8, 3}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return std::string(c.reduction == kernels::Reduction::subgroup ? "subgroup" : "shared") + "_wg" +
                                  std::to_string(c.workgroup) + "_l" + std::to_string(c.lanes) + "_nv" + std::to_string(c.max_vectors);
                         });

// The seed's hidden width and a head-like asymmetric matrix at 16 vectors.
TEST(MatvecBatchQ4Seed, SeedWidths) {
  const Case c{kernels::Reduction::best, 256, 32, 16};
  EXPECT_LT(run_batch(c, 512, 1024, 16, false, kernels::OutputMode::accumulate, 7), test::kF32Tolerance);
  EXPECT_LT(run_batch(c, 1000, 1024, 16, true, kernels::OutputMode::overwrite, 8), test::kF32Tolerance);
}

// More workgroups than one grid dimension holds: the kernel's linear index over a 2D grid.
TEST(MatvecBatchQ4Seed, TwoDimensionalGridCoversEveryRow) {
  for (auto reduction : {kernels::Reduction::shared, kernels::Reduction::best})
    EXPECT_LT(run_batch({reduction, 32, 32, 4}, 1001, 64, 4, true, kernels::OutputMode::overwrite, 11, 40), test::kF32Tolerance);
}

TEST(MatvecBatchQ4Errors, BadConfigsAndBindsAreRejected) {
  auto& k = test::test_kernels();
  EXPECT_THROW(kernels::MatvecBatchQ4(k, {.rows = 8, .cols = 48}), Error);
  EXPECT_THROW(kernels::MatvecBatchQ4(k, {.rows = 8, .cols = 64, .lanes = 24}), Error);
  EXPECT_THROW(kernels::MatvecBatchQ4(k, {.rows = 8, .cols = 64, .lanes = 4}), Error);  // 8 lanes share a block
  EXPECT_THROW(kernels::MatvecBatchQ4(k, {.rows = 8, .cols = 64, .max_vectors = 0}), Error);
  EXPECT_THROW(kernels::MatvecBatchQ4(k, {.rows = 8, .cols = 64, .max_vectors = kernels::kMaxVectors + 1}), Error);
  EXPECT_THROW(kernels::MatvecBatchQ4(k, {.rows = 8, .cols = 64, .max_vectors = 16, .workgroup_size = 1024}), Error);  // workgroup memory

  kernels::MatvecBatchQ4 mv(k, {.rows = 8, .cols = 64, .max_vectors = 4});
  auto w = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(8 * 64, 1), 8, 64));
  auto asym = test::upload_q4(reference::quantize_q4_asymmetric(test::random_floats(8 * 64, 1), 8, 64));
  gpu::Buffer x = test::upload_floats(std::vector<float>(4 * 64), "x");
  gpu::Buffer y = test::upload_floats(std::vector<float>(4 * 8), "y");
  EXPECT_NO_THROW(mv.bind(w.matrix, {&x}, {&y}, 4));
  EXPECT_THROW(mv.bind(w.matrix, {&x}, {&y}, 5), Error);  // above max_vectors
  EXPECT_THROW(mv.bind(w.matrix, {&x}, {&y}, 0), Error);
  EXPECT_THROW(mv.bind(asym.matrix, {&x}, {&y}, 1), Error);
  EXPECT_THROW(mv.bind(w.matrix, {&x, 0, 64 * 4}, {&y}, 2), Error);  // x covers one vector
}
