// The decode MLP without a dependent down dispatch (matvec_q4.wgsl DOWN_DELTA, DELTA_INPUT,
// DELTA_FOLD; fixed_delta.wgsl) against the CPU reference: a gated matvec whose workgroups each
// multiply their silu * up channels by the down matrix and add into a 64-bit fixed-point delta
// with integer atomics; a matvec reading x + delta; an accumulating matvec folding the delta into
// y and clearing it. Every variant, geometries with 8 to 64 channels a workgroup, seed shapes.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "gpu/recorder.h"
#include "kernels/matvec_q4.h"
#include "q4_gpu.h"
#include "reference/llm_ops_reference.h"

using namespace ember;
using kernels::MatvecGeometry;

namespace {

// fixed_delta.wgsl's encoding: (lo, hi) = (fraction * 2^32, floor) of each value.
std::vector<uint32_t> to_fixed(const std::vector<float>& v) {
  std::vector<uint32_t> w;
  for (float x : v) {
    const double f = std::floor(double(x));
    w.push_back(static_cast<uint32_t>((double(x) - f) * 4294967296.0));
    w.push_back(static_cast<uint32_t>(static_cast<int32_t>(f)));
  }
  return w;
}

std::vector<float> from_fixed(const std::vector<uint32_t>& w) {
  std::vector<float> v;
  for (size_t i = 0; i + 1 < w.size(); i += 2) v.push_back(float(double(static_cast<int32_t>(w[i + 1])) + w[i] / 4294967296.0));
  return v;
}

gpu::Buffer upload_words(const std::vector<uint32_t>& w) {
  gpu::Buffer b = test::test_device().create_storage(w.size() * 4, "delta");
  test::test_device().upload(b, std::span<const uint32_t>(w));
  return b;
}

// Gated gate_up (2F x H) with the norm, the down projection (D x F) into a delta that starts at
// d0: returns the worse rel_l2 of the delta (vs d0 + down . silu(gate) * up) and of y (silu * up).
double run_down(kernels::Q4Variant variant, MatvecGeometry g, uint32_t F, uint32_t H, uint32_t D, uint32_t seed) {
  auto& dev = test::test_device();
  auto gu = reference::quantize_q4_symmetric(test::random_floats(size_t(2) * F * H, seed), 2 * F, H);
  auto down = reference::quantize_q4_symmetric(test::random_floats(size_t(D) * F, seed + 1), D, F);
  auto x = test::random_floats(H, seed + 2, 3.0f);
  auto norm_w = test::random_floats(H, seed + 3);
  auto d0 = test::random_floats(D, seed + 4, 2.0f);
  auto act = reference::silu_mul(reference::matvec(reference::dequantize_q4(gu), 2 * F, H, reference::rmsnorm(x, norm_w, 1, H, 1e-5f)), 1, F);
  auto ref = reference::matvec(reference::dequantize_q4(down), D, F, act);
  for (uint32_t o = 0; o < D; o++) ref[o] += d0[o];

  auto wgu = test::upload_q4(gu);
  auto wdown = test::upload_q4(down);
  gpu::Buffer xb = test::upload_floats(x, "x"), nb = test::upload_floats(norm_w, "norm_w");
  gpu::Buffer yb = test::upload_floats(std::vector<float>(F, test::kPoison), "y");
  gpu::Buffer db = upload_words(to_fixed(d0));
  kernels::MatvecQ4 mv(test::test_kernels(),
                       {.rows = F, .cols = H, .variant = variant, .geometry = g, .gated = true, .norm_input = true, .eps = 1e-5f, .down_rows = D});
  auto bound = mv.bind(wgu.matrix, {&xb}, {&yb}, {&nb}, {}, {}, nullptr, {&db}, &wdown.matrix);
  gpu::Recorder rec(dev);
  mv.record(rec, bound);
  rec.submit();
  return std::max(test::rel_l2(from_fixed(dev.download_as<uint32_t>(db)), ref), test::rel_l2(dev.download_as<float>(yb), act));
}

}  // namespace

TEST(MatvecQ4Delta, GatedDownIntoTheDeltaMatchesReference) {
  uint32_t seed = 2000;
  // 16, 64 and 8 channels a workgroup (CPW); F = 96 leaves half of the last 64-channel workgroup empty.
  const MatvecGeometry geometries[] = {{256, 32, 2, 1}, {128, 16, 8, 1}, {64, 8, 1, 1}};
  for (auto v : {kernels::Q4Variant::carried, kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::shared_x})
    for (const auto& g : geometries)
      EXPECT_LT(run_down(v, g, 96, 64, 40, seed++), test::kF32Tolerance) << kernels::q4_variant_name(v) << " wg" << g.workgroup_size << " rps" << g.rows_per_subgroup;
}

TEST(MatvecQ4Delta, SeedShapeMlp) {
  EXPECT_LT(run_down(kernels::Q4Variant::shared_x, {256, 32, 4, 1}, 2560, 1024, 1024, 2100), test::kF32Tolerance);
}

// x + delta as the input (with the norm), and y += W a + delta with the delta cleared.
TEST(MatvecQ4Delta, InputReadsTheDeltaAndFoldClearsIt) {
  auto& dev = test::test_device();
  const uint32_t R = 45, C = 96;
  uint32_t seed = 2200;
  for (auto v : {kernels::Q4Variant::carried, kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::shared_x}) {
    auto host = reference::quantize_q4_symmetric(test::random_floats(size_t(R) * C, seed), R, C);
    auto w = test::upload_q4(host);
    auto x = test::random_floats(C, seed + 1, 3.0f), norm_w = test::random_floats(C, seed + 2), d = test::random_floats(C, seed + 3, 2.0f);
    std::vector<float> xd(C);
    for (uint32_t i = 0; i < C; i++) xd[i] = x[i] + d[i];
    auto ref = reference::matvec(reference::dequantize_q4(host), R, C, reference::rmsnorm(xd, norm_w, 1, C, 1e-5f));
    gpu::Buffer xb = test::upload_floats(x, "x"), nb = test::upload_floats(norm_w, "norm_w"), db = upload_words(to_fixed(d));
    gpu::Buffer yb = test::upload_floats(std::vector<float>(R, test::kPoison), "y");
    kernels::MatvecQ4 in(test::test_kernels(), {.rows = R, .cols = C, .variant = v, .geometry = {64, 8, 2, 1}, .norm_input = true, .eps = 1e-5f, .delta_input = true});
    auto bound = in.bind(w.matrix, {&xb}, {&yb}, {&nb}, {}, {}, nullptr, {&db});
    gpu::Recorder rec(dev);
    in.record(rec, bound);
    rec.submit();
    EXPECT_LT(test::rel_l2(dev.download_as<float>(yb), ref), test::kF32Tolerance) << "delta_input " << kernels::q4_variant_name(v);

    // Fold: W is R x C, the delta and y have R values.
    auto a = test::random_floats(C, seed + 4), y0 = test::random_floats(R, seed + 5), dr = test::random_floats(R, seed + 6, 2.0f);
    auto fold_ref = reference::matvec(reference::dequantize_q4(host), R, C, a);
    for (uint32_t r = 0; r < R; r++) fold_ref[r] += y0[r] + dr[r];
    gpu::Buffer ab = test::upload_floats(a, "a"), y0b = test::upload_floats(y0, "y0"), drb = upload_words(to_fixed(dr));
    kernels::MatvecQ4 fold(test::test_kernels(),
                           {.rows = R, .cols = C, .variant = v, .geometry = {64, 8, 2, 1}, .mode = kernels::OutputMode::accumulate, .delta_fold = true});
    auto fb = fold.bind(w.matrix, {&ab}, {&y0b}, {}, {}, {}, nullptr, {&drb});
    gpu::Recorder rec2(dev);
    fold.record(rec2, fb);
    rec2.submit();
    EXPECT_LT(test::rel_l2(dev.download_as<float>(y0b), fold_ref), test::kF32Tolerance) << "delta_fold " << kernels::q4_variant_name(v);
    EXPECT_EQ(dev.download_as<uint32_t>(drb), std::vector<uint32_t>(2 * R, 0u)) << "delta_fold clears the delta";
    seed += 10;
  }
}

TEST(MatvecQ4Delta, BadOptionsAreClearErrors) {
  auto& k = test::test_kernels();
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 16, .cols = 64, .down_rows = 8}), Error);                     // not gated
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 12, .cols = 64, .gated = true, .down_rows = 8}), Error);      // rows % 8
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 16, .cols = 64, .geometry = {32, 8, 1, 1}, .gated = true, .down_rows = 8}), Error);  // 4 rows a workgroup
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 16, .cols = 64, .delta_fold = true}), Error);                 // overwrite mode
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 16, .cols = 64, .delta_input = true, .delta_fold = true}), Error);
  kernels::MatvecQ4 gated(k, {.rows = 32, .cols = 64, .geometry = {64, 8, 1, 1}, .gated = true, .down_rows = 8});
  auto w = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(64 * 64, 1), 64, 64));
  auto down = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(8 * 32, 2), 8, 32));
  gpu::Buffer v = test::upload_floats(std::vector<float>(64), "v"), d = upload_words(std::vector<uint32_t>(16, 0));
  EXPECT_THROW(gated.bind(w.matrix, {&v}, {&v}, {}, {}, {}, nullptr, {&d}), Error);  // no down matrix
  EXPECT_THROW(gated.bind(w.matrix, {&v}, {&v}, {}, {}, {}, nullptr, {}, &down.matrix), Error);  // no delta
  EXPECT_NO_THROW(gated.bind(w.matrix, {&v}, {&v}, {}, {}, {}, nullptr, {&d}, &down.matrix));
}
