// matvec_q4.wgsl against the CPU reference: every variant, reduction, output mode and a spread of
// geometries (logical subgroup widths below, at and above lavapipe's 8), on awkward shapes.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "gpu/recorder.h"
#include "kernels/matvec_q4.h"
#include "q4_gpu.h"

using namespace ember;
using kernels::MatvecGeometry;

namespace {

struct Case {
  kernels::Q4Variant variant;
  kernels::Reduction reduction;
  MatvecGeometry geometry;
};

// Runs the kernel on a fresh random matrix and x; returns rel_l2 against the reference.
// prefetch: the kernel also reads another matrix (of prefetch_rows x cols) ahead, which must not
// change the output.
double run_matvec(const Case& c, uint32_t rows, uint32_t cols, bool asymmetric, kernels::OutputMode mode, uint32_t seed,
                  uint32_t max_per_dim = 0, bool prefetch = false, uint32_t prefetch_rows = 0) {
  auto& dev = test::test_device();
  auto wf = test::random_floats(size_t(rows) * cols, seed);
  auto host = asymmetric ? reference::quantize_q4_asymmetric(wf, rows, cols) : reference::quantize_q4_symmetric(wf, rows, cols);
  auto x = test::random_floats(cols, seed + 1000);
  auto ref = reference::matvec(reference::dequantize_q4(host), rows, cols, x);
  std::vector<float> y0(rows, test::kPoison);
  if (mode == kernels::OutputMode::accumulate) {
    y0 = test::random_floats(rows, seed + 2000);
    for (uint32_t r = 0; r < rows; r++) ref[r] += y0[r];
  }
  auto w = test::upload_q4(host);
  gpu::Buffer xb = test::upload_floats(x, "x");
  gpu::Buffer yb = test::upload_floats(y0, "y");
  kernels::MatvecQ4 mv(test::test_kernels(), {.rows = rows,
                                              .cols = cols,
                                              .asymmetric = asymmetric,
                                              .variant = c.variant,
                                              .geometry = c.geometry,
                                              .mode = mode,
                                              .prefetch = prefetch,
                                              .reduction = c.reduction,
                                              .max_workgroups_per_dim = max_per_dim});
  const uint32_t next_rows = std::max(1u, prefetch_rows);
  auto next = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(size_t(next_rows) * cols, seed + 3000), next_rows, cols));
  auto bound = mv.bind(w.matrix, {&xb}, {&yb}, {}, {}, {}, prefetch ? &next.matrix : nullptr);
  gpu::Recorder rec(dev);
  mv.record(rec, bound);
  rec.submit();
  return test::rel_l2(dev.download_as<float>(yb), ref);
}

std::string geometry_name(const MatvecGeometry& g) {
  return "wg" + std::to_string(g.workgroup_size) + "_sg" + std::to_string(g.subgroup_size) + "_r" +
         std::to_string(g.rows_per_subgroup) + "_s" + std::to_string(g.subgroups_per_row);
}

}  // namespace

class MatvecQ4Test : public ::testing::TestWithParam<std::tuple<kernels::Q4Variant, kernels::Reduction, MatvecGeometry>> {
 protected:
  Case param() const { return {std::get<0>(GetParam()), std::get<1>(GetParam()), std::get<2>(GetParam())}; }
  void SetUp() override {
    if (std::get<1>(GetParam()) == kernels::Reduction::subgroup && !test::test_device().has_subgroups())
      GTEST_SKIP() << "no subgroups";
  }
};

TEST_P(MatvecQ4Test, SymmetricMatchesReference) {
  uint32_t seed = 10;
  for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 32}, {7, 64}, {33, 96}, {100, 320}})
    EXPECT_LT(run_matvec(param(), rows, cols, false, kernels::OutputMode::overwrite, seed++), test::kF32Tolerance)
        << rows << "x" << cols;
}

TEST_P(MatvecQ4Test, AsymmetricMatchesReference) {
  uint32_t seed = 50;
  for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 32}, {33, 96}, {1000, 64}})
    EXPECT_LT(run_matvec(param(), rows, cols, true, kernels::OutputMode::overwrite, seed++), test::kF32Tolerance)
        << rows << "x" << cols;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, MatvecQ4Test,
    ::testing::Combine(::testing::Values(kernels::Q4Variant::carried, kernels::Q4Variant::v3_both),
                       ::testing::Values(kernels::Reduction::subgroup, kernels::Reduction::shared),
                       // Lane groups wider than, equal to and narrower than lavapipe's subgroup
                       // of 8; several subgroups per row; 1..8 rows per lane group; one
                       // subgroup-wide workgroup of 8 rows (the CPU adapters' default).
                       ::testing::Values(MatvecGeometry{512, 32, 4, 1}, MatvecGeometry{64, 4, 3, 2},
                                         MatvecGeometry{32, 4, 2, 1}, MatvecGeometry{128, 16, 8, 1}, MatvecGeometry{8, 8, 8, 1})),
    [](const auto& info) {
      return std::string(kernels::q4_variant_name(std::get<0>(info.param))) +
             (std::get<1>(info.param) == kernels::Reduction::subgroup ? "_subgroup_" : "_shared_") +
             geometry_name(std::get<2>(info.param));
    });

// Test names of a one-variant suite: the reduction and the geometry.
const auto reduction_and_geometry = [](const auto& info) {
  return std::string(std::get<1>(info.param) == kernels::Reduction::subgroup ? "subgroup_" : "shared_") + geometry_name(std::get<2>(info.param));
};

// split_block: eight lanes per block, so lane groups of at least 8 (and wider than lavapipe's
// subgroup; several subgroups per row; up to 8 rows per group).
INSTANTIATE_TEST_SUITE_P(
    SplitBlock, MatvecQ4Test,
    ::testing::Combine(::testing::Values(kernels::Q4Variant::split_block), ::testing::Values(kernels::Reduction::subgroup, kernels::Reduction::shared),
                       ::testing::Values(MatvecGeometry{512, 32, 4, 1}, MatvecGeometry{64, 4, 3, 2}, MatvecGeometry{64, 8, 2, 1},
                                         MatvecGeometry{128, 16, 8, 1}, MatvecGeometry{8, 8, 8, 1})),
    reduction_and_geometry);

// shared_x: every weight block a lane needs held in registers (up to 16), x staged in workgroup
// memory; one to three blocks per lane and row at these shapes.
INSTANTIATE_TEST_SUITE_P(
    SharedX, MatvecQ4Test,
    ::testing::Combine(::testing::Values(kernels::Q4Variant::shared_x), ::testing::Values(kernels::Reduction::subgroup, kernels::Reduction::shared),
                       ::testing::Values(MatvecGeometry{512, 32, 4, 1}, MatvecGeometry{64, 4, 3, 2}, MatvecGeometry{32, 4, 2, 1},
                                         MatvecGeometry{128, 16, 8, 1})),
    reduction_and_geometry);

// Accumulate mode (y += W x) for each variant and reduction; its only difference is the store.
TEST(MatvecQ4Accumulate, AddsIntoY) {
  uint32_t seed = 30;
  for (auto variant : {kernels::Q4Variant::carried, kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::shared_x})
    for (auto reduction : {kernels::Reduction::best, kernels::Reduction::shared})
      for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{7, 64}, {100, 320}})
        EXPECT_LT(run_matvec({variant, reduction, {256, 32, 3, 1}}, rows, cols, false, kernels::OutputMode::accumulate, seed++),
                  test::kF32Tolerance)
            << rows << "x" << cols;
}

// The seed's shapes with the seed candidate's geometries: conv_in_proj-like 1024 -> 3072 is
// covered by 2560x1024 (gate_up-like rows), and the head at vocab ~1000.
TEST(MatvecQ4Seed, SeedShapesWithSeedGeometries) {
  EXPECT_LT(run_matvec({kernels::Q4Variant::carried, kernels::Reduction::best, {512, 32, 4, 1}}, 2560, 1024, false,
                       kernels::OutputMode::accumulate, 7),
            test::kF32Tolerance);
  EXPECT_LT(run_matvec({kernels::Q4Variant::v3_both, kernels::Reduction::best, {512, 32, 1, 1}}, 1024, 1024, false,
                       kernels::OutputMode::overwrite, 8),
            test::kF32Tolerance);
  EXPECT_LT(run_matvec({kernels::Q4Variant::v3_both, kernels::Reduction::best, {256, 32, 8, 1}}, 1000, 1024, true,
                       kernels::OutputMode::overwrite, 9),
            test::kF32Tolerance);
  EXPECT_LT(run_matvec({kernels::Q4Variant::split_block, kernels::Reduction::best, {64, 16, 2, 2}}, 2560, 1024, false,
                       kernels::OutputMode::accumulate, 10),
            test::kF32Tolerance);
  // mlp_down-like 1024 x 2560: 80 blocks over 32 lanes, three held blocks per row, the last partial.
  EXPECT_LT(run_matvec({kernels::Q4Variant::shared_x, kernels::Reduction::best, {256, 32, 2, 1}}, 1024, 2560, false,
                       kernels::OutputMode::accumulate, 12),
            test::kF32Tolerance);
}

// More workgroups than one grid dimension holds: the kernel's linear index over a 2D grid.
TEST(MatvecQ4Seed, TwoDimensionalGridCoversEveryRow) {
  for (auto reduction : {kernels::Reduction::shared, kernels::Reduction::best})
    EXPECT_LT(run_matvec({kernels::Q4Variant::v3_both, reduction, {32, 32, 1, 1}}, 1001, 64, true,
                         kernels::OutputMode::overwrite, 11, 40),
              test::kF32Tolerance);
}

TEST(MatvecQ4Errors, BadGeometryAndMismatchedMatricesAreRejected) {
  auto& k = test::test_kernels();
  auto make = [&](MatvecGeometry g) { kernels::MatvecQ4(k, {.rows = 8, .cols = 64, .geometry = g}); };
  EXPECT_THROW(make({256, 24, 1, 1}), Error);   // lane group not a power of two
  EXPECT_THROW(make({100, 32, 1, 1}), Error);   // workgroup not whole lane groups
  EXPECT_THROW(make({256, 32, 9, 1}), Error);   // too many rows per lane group
  EXPECT_THROW(make({64, 2, 4, 1}), Error);     // more rows than the group's lanes store
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 8, .cols = 48}), Error);
  EXPECT_THROW(kernels::parse_q4_variant("v4"), Error);
  EXPECT_EQ(kernels::parse_q4_variant("v3_both"), kernels::Q4Variant::v3_both);
  EXPECT_EQ(kernels::parse_q4_variant("split_block"), kernels::Q4Variant::split_block);
  EXPECT_THROW(kernels::MatvecQ4(test::test_kernels(), {.rows = 8, .cols = 64, .variant = kernels::Q4Variant::split_block, .geometry = {32, 4, 1, 1}}),
               Error);  // 4 lanes: split_block needs 8
  EXPECT_EQ(kernels::parse_q4_variant("shared_x"), kernels::Q4Variant::shared_x);
  EXPECT_THROW(kernels::MatvecQ4(test::test_kernels(), {.rows = 8, .cols = 1024, .variant = kernels::Q4Variant::shared_x, .geometry = {32, 4, 4, 1}}),
               Error);  // 8 blocks per lane x 4 rows = 32 held blocks, above 16

  kernels::MatvecQ4 mv(k, {.rows = 8, .cols = 64});
  auto w = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(8 * 64, 1), 8, 64));
  auto asym = test::upload_q4(reference::quantize_q4_asymmetric(test::random_floats(8 * 64, 1), 8, 64));
  gpu::Buffer x = test::upload_floats(std::vector<float>(64), "x");
  gpu::Buffer y = test::upload_floats(std::vector<float>(8), "y");
  gpu::Buffer small = test::upload_floats(std::vector<float>(4), "small");
  EXPECT_NO_THROW(mv.bind(w.matrix, {&x}, {&y}));
  EXPECT_THROW(mv.bind(asym.matrix, {&x}, {&y}), Error);
  EXPECT_THROW(mv.bind(w.matrix, {&small}, {&y}), Error);
  EXPECT_THROW(mv.bind(w.matrix, {&x}, {&small}), Error);
}

// Prefetching another matrix (smaller, larger, on a 2D grid) leaves every output as it was, in
// each variant (one geometry: the prefetch path is the same code for all geometries).
TEST(MatvecQ4, PrefetchLeavesTheOutputUnchanged) {
  const auto reduction = test::test_device().has_subgroups() ? kernels::Reduction::subgroup : kernels::Reduction::shared;
  uint32_t seed = 70;
  for (auto variant : {kernels::Q4Variant::carried, kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::shared_x}) {
    const Case c{variant, reduction, {64, 8, 2, 1}};
    EXPECT_LT(run_matvec(c, 7, 64, false, kernels::OutputMode::overwrite, seed++, 0, true, 3), test::kF32Tolerance);
    EXPECT_LT(run_matvec(c, 33, 96, true, kernels::OutputMode::accumulate, seed++, 0, true, 1000), test::kF32Tolerance);
    EXPECT_LT(run_matvec(c, 100, 320, false, kernels::OutputMode::accumulate, seed++, 5, true, 64), test::kF32Tolerance)
        << "2D grid";
  }
}
