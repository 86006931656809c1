// matmul_q4.wgsl against the CPU reference: tiles that do not divide rows or tokens, both output
// modes, both weight layouts (row-major and the k-major down.kquant), several geometries, and
// seed-like prefill shapes.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "gpu/recorder.h"
#include "kernels/matmul_q4.h"
#include "q4_gpu.h"

using namespace ember;

namespace {

using kernels::MatmulGeometry;

double run_matmul(uint32_t rows, uint32_t cols, uint32_t tokens, kernels::OutputMode mode, MatmulGeometry g, uint32_t seed,
                  bool kmajor = false) {
  auto& dev = test::test_device();
  auto w32 = test::random_floats(size_t(rows) * cols, seed);
  // k-major: the stored matrix is W transposed, quantized along the outputs; the reference uses
  // the dequantized stored values transposed back to [rows][cols].
  auto host = kmajor ? reference::quantize_q4_kmajor(w32, rows, cols) : reference::quantize_q4_symmetric(w32, rows, cols);
  auto wd = reference::dequantize_q4(host);
  if (kmajor) wd = reference::transpose(wd, cols, rows);
  auto x = test::random_floats(size_t(tokens) * cols, seed + 1000);
  auto ref = reference::matmul(wd, rows, cols, x, tokens);
  std::vector<float> y0(size_t(tokens) * rows, test::kPoison);
  if (mode == kernels::OutputMode::accumulate) {
    y0 = test::random_floats(y0.size(), seed + 2000);
    for (size_t i = 0; i < ref.size(); i++) ref[i] += y0[i];
  }
  auto w = test::upload_q4(host);
  gpu::Buffer xb = test::upload_floats(x, "x");
  gpu::Buffer yb = test::upload_floats(y0, "y");
  kernels::MatmulQ4 mm(test::test_kernels(), {.rows = rows, .cols = cols, .mode = mode, .kmajor = kmajor, .geometry = g});
  // Split-K partials, poisoned: every value the sum reads must have been written.
  const uint64_t split = kernels::matmul_split_floats(mm.config(), tokens);
  gpu::Buffer pb = test::upload_floats(std::vector<float>(std::max<uint64_t>(split, 1), test::kPoison), "partials");
  auto bound = mm.bind(w.matrix, {&xb}, {&yb}, tokens, {&pb});
  gpu::Recorder rec(dev);
  mm.record(rec, bound);
  rec.submit();
  return test::rel_l2(dev.download_as<float>(yb), ref);
}

// Scalar and vec4 tiles; with vec4, odd thread counts put a thread's runs of 4 across tile edges.
// Split-K: 2 and 3 chunks (uneven: the last chunk is shorter, or K has fewer 32-blocks than
// splits) and a split whose chunk is the K step. {4, 32, 16, 4}: the CPU adapters' default.
const std::vector<MatmulGeometry> kGeometries{{16, 16, 16}, {4, 8, 32}, {8, 2, 8}, {4, 6, 16, 4}, {4, 32, 16, 4},
                                              {16, 16, 16, 8, true}, {3, 5, 8, 8, true}, {4, 6, 16, 4, true},
                                              {8, 4, 16, 8, false, 2}, {4, 6, 8, 4, true, 3}, {4, 4, 32, 8, false, 16}};

}  // namespace

// (A lone 1x32 output is left out: one cancelling dot product makes rel_l2 meaningless.)
TEST(MatmulQ4, MatchesReferenceOnAwkwardShapes) {
  uint32_t seed = 100;
  for (auto mode : {kernels::OutputMode::overwrite, kernels::OutputMode::accumulate})
    for (const auto& g : kGeometries)
      for (auto [rows, cols, tokens] : std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>{
               {1, 64, 3}, {7, 32, 1}, {7, 64, 5}, {33, 96, 17}, {100, 320, 70}, {130, 64, 131}})
        EXPECT_LT(run_matmul(rows, cols, tokens, mode, g, seed++), test::kF32Tolerance)
            << rows << "x" << cols << " T=" << tokens << " geometry " << kernels::matmul_geometry_name(g)
            << (mode == kernels::OutputMode::accumulate ? " accumulate" : "");
}

// k-major weights: rows a multiple of 32; cols (the K dimension) need not be.
TEST(MatmulQ4, KMajorMatchesReferenceOnAwkwardShapes) {
  uint32_t seed = 500;
  for (auto mode : {kernels::OutputMode::overwrite, kernels::OutputMode::accumulate})
    for (const auto& g : kGeometries)
      for (auto [rows, cols, tokens] : std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>{
               {32, 40, 3}, {64, 7, 1}, {96, 100, 17}, {160, 64, 70}, {32, 33, 131}})
        EXPECT_LT(run_matmul(rows, cols, tokens, mode, g, seed++, /*kmajor=*/true), test::kF32Tolerance)
            << rows << "x" << cols << " T=" << tokens << " geometry " << kernels::matmul_geometry_name(g)
            << (mode == kernels::OutputMode::accumulate ? " accumulate" : "");
}

TEST(MatmulQ4, SeedLikePrefillShapes) {
  EXPECT_LT(run_matmul(1024, 1024, 37, kernels::OutputMode::accumulate, {}, 7), test::kF32Tolerance);
  EXPECT_LT(run_matmul(1024, 2560, 37, kernels::OutputMode::accumulate, {}, 8, /*kmajor=*/true), test::kF32Tolerance);
  EXPECT_LT(run_matmul(1024, 2560, 37, kernels::OutputMode::accumulate, {16, 16, 16, 8, true}, 9, /*kmajor=*/true), test::kF32Tolerance);
  EXPECT_LT(run_matmul(1024, 2560, 37, kernels::OutputMode::accumulate, {8, 32, 16, 4, true, 2}, 10), test::kF32Tolerance);
}

// GATED: Y [T][F] = silu(gate) * up of the product with W = [gate rows | up rows]; F not a
// multiple of the tile's half (the last workgroup's gate half runs past F), tokens not a multiple
// of the tile; the output beyond T x F stays poison.
TEST(MatmulQ4, GatedEpilogueMatchesSiluOfGateTimesUp) {
  auto& dev = test::test_device();
  uint32_t seed = 900;
  for (const auto& g : kGeometries) {
    if (!kernels::matmul_gated_fits(g)) continue;
    for (auto [F, cols, tokens] : std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>{{5, 64, 3}, {40, 96, 17}, {100, 64, 70}}) {
      const uint32_t rows = 2 * F;
      auto host = reference::quantize_q4_symmetric(test::random_floats(size_t(rows) * cols, seed), rows, cols);
      auto x = test::random_floats(size_t(tokens) * cols, seed + 1);
      auto prod = reference::matmul(reference::dequantize_q4(host), rows, cols, x, tokens);
      std::vector<float> ref(size_t(tokens) * F);
      for (uint32_t t = 0; t < tokens; t++)
        for (uint32_t i = 0; i < F; i++) {
          const double gate = prod[size_t(t) * rows + i], up = prod[size_t(t) * rows + F + i];
          ref[size_t(t) * F + i] = float(gate / (1.0 + std::exp(-gate)) * up);
        }
      auto w = test::upload_q4(host);
      gpu::Buffer xb = test::upload_floats(x, "x");
      gpu::Buffer yb = test::upload_floats(std::vector<float>(ref.size() + 16, test::kPoison), "y");
      kernels::MatmulQ4 mm(test::test_kernels(), {.rows = rows, .cols = cols, .geometry = g, .gated = true});
      auto bound = mm.bind(w.matrix, {&xb}, {&yb}, tokens);
      gpu::Recorder rec(dev);
      mm.record(rec, bound);
      rec.submit();
      auto got = dev.download_as<float>(yb);
      for (size_t e = ref.size(); e < got.size(); e++) ASSERT_EQ(got[e], test::kPoison) << "wrote past T x F";
      got.resize(ref.size());
      EXPECT_LT(test::rel_l2(got, ref), test::kF32Tolerance) << "F " << F << " T " << tokens << " geometry " << kernels::matmul_geometry_name(g);
      seed += 2;
    }
  }
  auto& k = test::test_kernels();
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 64, .cols = 64, .geometry = {.k_splits = 2}, .gated = true}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 64, .cols = 64, .geometry = {16, 16, 16, 4, true}, .gated = true}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 64, .cols = 64, .mode = kernels::OutputMode::accumulate, .gated = true}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 63, .cols = 64, .gated = true}), Error);
}

TEST(MatmulQ4, RejectsBadGeometriesAndShapes) {
  auto& k = test::test_kernels();
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 8, .cols = 64, .geometry = {.k_step = 12}}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 8, .cols = 64, .geometry = {.wg_tokens = 0}}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 8, .cols = 64, .geometry = {.wg_tokens = 64, .wg_rows = 64}}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 8, .cols = 40}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 40, .cols = 64, .kmajor = true}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 8, .cols = 64, .geometry = {.micro = 2}}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 64, .cols = 64, .kmajor = true, .geometry = {.wg_rows = 3, .micro = 4}}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 8, .cols = 64, .geometry = {.k_splits = 0}}), Error);
  EXPECT_THROW(kernels::MatmulQ4(k, {.rows = 8, .cols = 64, .geometry = {.k_splits = 17}}), Error);
  kernels::MatmulQ4 mm(k, {.rows = 8, .cols = 64});
  auto w = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(8 * 64, 1), 8, 64));
  gpu::Buffer x = test::upload_floats(std::vector<float>(64 * 2), "x");
  gpu::Buffer y = test::upload_floats(std::vector<float>(8 * 2), "y");
  EXPECT_NO_THROW(mm.bind(w.matrix, {&x}, {&y}, 2));
  EXPECT_THROW(mm.bind(w.matrix, {&x}, {&y}, 3), Error);  // x too small for 3 tokens
  EXPECT_THROW(mm.bind(w.matrix, {&x}, {&y}, 0), Error);
  kernels::MatmulQ4 split(k, {.rows = 8, .cols = 64, .geometry = {.k_splits = 2}});
  EXPECT_EQ(kernels::matmul_split_floats(split.config(), 2), 2u * 2 * 8);
  EXPECT_THROW(split.bind(w.matrix, {&x}, {&y}, 2), Error);             // split-K without its partials
  EXPECT_THROW(split.bind(w.matrix, {&x}, {&y}, 2, {&y}), Error);       // partials too small (16 floats < 32)
  EXPECT_NO_THROW(split.bind(w.matrix, {&x}, {&y}, 2, {&x}));
  kernels::MatmulQ4 km(k, {.rows = 32, .cols = 64, .kmajor = true});
  EXPECT_THROW(km.bind(w.matrix, {&x}, {&x}, 2), Error);  // the stored shape must be [cols][rows] = 64x32
}
