// matmul_q4.wgsl against the CPU reference: tiles that do not divide rows or tokens, both output
// modes, a few tile shapes, and one seed-like prefill shape.
#include <gtest/gtest.h>

#include "common/error.h"
#include "gpu/recorder.h"
#include "kernels/matmul_q4.h"
#include "q4_gpu.h"

using namespace ember;

namespace {

double run_matmul(uint32_t rows, uint32_t cols, uint32_t tokens, kernels::OutputMode mode, uint32_t tile_rows,
                  uint32_t tile_tokens, uint32_t seed) {
  auto& dev = test::test_device();
  auto host = reference::quantize_q4_symmetric(test::random_floats(size_t(rows) * cols, seed), rows, cols);
  auto x = test::random_floats(size_t(tokens) * cols, seed + 1000);
  auto ref = reference::matmul(reference::dequantize_q4(host), rows, cols, x, tokens);
  std::vector<float> y0(size_t(tokens) * rows, test::kPoison);
  if (mode == kernels::OutputMode::accumulate) {
    y0 = test::random_floats(y0.size(), seed + 2000);
    for (size_t i = 0; i < ref.size(); i++) ref[i] += y0[i];
  }
  auto w = test::upload_q4(host);
  gpu::Buffer xb = test::upload_floats(x, "x");
  gpu::Buffer yb = test::upload_floats(y0, "y");
  kernels::MatmulQ4 mm(test::test_kernels(),
                       {.rows = rows, .cols = cols, .mode = mode, .tile_rows = tile_rows, .tile_tokens = tile_tokens});
  auto bound = mm.bind(w.matrix, {&xb}, {&yb}, tokens);
  gpu::Recorder rec(dev);
  mm.record(rec, bound);
  rec.submit();
  return test::rel_l2(dev.download_as<float>(yb), ref);
}

}  // namespace

// (A lone 1x32 output is left out: one cancelling dot product makes rel_l2 meaningless.)
TEST(MatmulQ4, MatchesReferenceOnAwkwardShapes) {
  uint32_t seed = 100;
  for (auto mode : {kernels::OutputMode::overwrite, kernels::OutputMode::accumulate})
    for (auto [tr, tt] : std::vector<std::pair<uint32_t, uint32_t>>{{64, 64}, {32, 16}, {16, 8}})
      for (auto [rows, cols, tokens] : std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>{
               {1, 64, 3}, {7, 32, 1}, {7, 64, 5}, {33, 96, 17}, {100, 320, 70}})
        EXPECT_LT(run_matmul(rows, cols, tokens, mode, tr, tt, seed++), test::kF32Tolerance)
            << rows << "x" << cols << " T=" << tokens << " tile " << tr << "x" << tt
            << (mode == kernels::OutputMode::accumulate ? " accumulate" : "");
}

TEST(MatmulQ4, SeedLikePrefillShape) {
  EXPECT_LT(run_matmul(1024, 1024, 37, kernels::OutputMode::accumulate, 64, 64, 7), test::kF32Tolerance);
}

TEST(MatmulQ4, RejectsBadTilesAndShapes) {
  auto& k = test::test_kernels();
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 8, .cols = 64, .tile_rows = 6}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 8, .cols = 64, .tile_rows = 256, .tile_tokens = 256}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 8, .cols = 40}), Error);
  kernels::MatmulQ4 mm(k, {.rows = 8, .cols = 64});
  auto w = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(8 * 64, 1), 8, 64));
  gpu::Buffer x = test::upload_floats(std::vector<float>(64 * 2), "x");
  gpu::Buffer y = test::upload_floats(std::vector<float>(8 * 2), "y");
  EXPECT_NO_THROW(mm.bind(w.matrix, {&x}, {&y}, 2));
  EXPECT_THROW(mm.bind(w.matrix, {&x}, {&y}, 3), Error);  // x too small for 3 tokens
  EXPECT_THROW(mm.bind(w.matrix, {&x}, {&y}, 0), Error);
}
