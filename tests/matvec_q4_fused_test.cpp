// matvec_q4.wgsl's fusion options against the CPU reference: the gated output (silu(gate) * up
// from a [2 * rows][cols] gate | up matrix, the MLP's gate_up with silu_mul fused in) and the
// RMSNorm input prologue (rmsnorm(x) * norm_w computed by every workgroup), alone and together,
// for both variants and reductions, geometries around lavapipe's subgroup of 8, awkward shapes.
#include <gtest/gtest.h>

#include "common/error.h"
#include "gpu/recorder.h"
#include "kernels/matvec_q4.h"
#include "q4_gpu.h"
#include "reference/llm_ops_reference.h"

using namespace ember;
using kernels::MatvecGeometry;

namespace {

struct Fusion {
  bool gated = false, norm_input = false;
};

// Runs the fused matvec on fresh random data; returns rel_l2 against the reference composition.
double run_fused(Fusion f, kernels::Q4Variant variant, kernels::Reduction reduction, MatvecGeometry g, uint32_t rows, uint32_t cols,
                 bool asymmetric, uint32_t seed) {
  auto& dev = test::test_device();
  const uint32_t wrows = f.gated ? 2 * rows : rows;
  auto wf = test::random_floats(size_t(wrows) * cols, seed);
  auto host = asymmetric ? reference::quantize_q4_asymmetric(wf, wrows, cols) : reference::quantize_q4_symmetric(wf, wrows, cols);
  // An x far from unit scale, so a missing or wrong norm shows.
  auto x = test::random_floats(cols, seed + 1, 3.0f);
  auto norm_w = test::random_floats(cols, seed + 2);
  const float eps = 1e-5f;
  auto input = f.norm_input ? reference::rmsnorm(x, norm_w, 1, cols, eps) : x;
  auto prod = reference::matvec(reference::dequantize_q4(host), wrows, cols, input);
  auto ref = f.gated ? reference::silu_mul(prod, 1, rows) : prod;

  auto w = test::upload_q4(host);
  gpu::Buffer xb = test::upload_floats(x, "x");
  gpu::Buffer nb = test::upload_floats(norm_w, "norm_w");
  gpu::Buffer yb = test::upload_floats(std::vector<float>(rows, test::kPoison), "y");
  kernels::MatvecQ4 mv(test::test_kernels(), {.rows = rows,
                                              .cols = cols,
                                              .asymmetric = asymmetric,
                                              .variant = variant,
                                              .geometry = g,
                                              .gated = f.gated,
                                              .norm_input = f.norm_input,
                                              .eps = eps,
                                              .reduction = reduction});
  auto bound = mv.bind(w.matrix, {&xb}, {&yb}, f.norm_input ? gpu::Binding{&nb} : gpu::Binding{});
  gpu::Recorder rec(dev);
  mv.record(rec, bound);
  rec.submit();
  return test::rel_l2(dev.download_as<float>(yb), ref);
}

const Fusion kFusions[] = {{true, false}, {false, true}, {true, true}};
// Lane groups wider than, equal to and narrower than lavapipe's subgroup of 8; several
// subgroups per row; a workgroup that is not a power of two (96 = 3 x 32: the norm's tree).
const MatvecGeometry kGeometries[] = {{256, 32, 2, 1}, {64, 4, 3, 2}, {96, 32, 8, 1}};

std::string name(Fusion f, kernels::Q4Variant v, kernels::Reduction r, const MatvecGeometry& g) {
  return std::string(f.gated ? "gated " : "") + (f.norm_input ? "norm_input " : "") + kernels::q4_variant_name(v) +
         (r == kernels::Reduction::shared ? " shared" : " best") + " wg" + std::to_string(g.workgroup_size) + "/sg" +
         std::to_string(g.subgroup_size) + "/r" + std::to_string(g.rows_per_subgroup) + "/s" + std::to_string(g.subgroups_per_row);
}

}  // namespace

TEST(MatvecQ4Fused, MatchesReferenceOnAwkwardShapes) {
  uint32_t seed = 700;
  // Every fusion x variant x geometry; the reduction alternates and the shape rotates (each
  // pipeline compile is slow on lavapipe, and cols is a pipeline constant).
  const std::pair<uint32_t, uint32_t> shapes[] = {{1, 32}, {7, 96}, {45, 320}};
  int i = 0;
  for (const Fusion& f : kFusions)
    for (auto v : {kernels::Q4Variant::carried, kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::shared_x})
      for (const auto& g : kGeometries) {
        const auto r = i % 2 ? kernels::Reduction::shared : kernels::Reduction::best;
        const auto [rows, cols] = shapes[(i + i / 3) % 3];  // each geometry meets every shape
        i++;
        EXPECT_LT(run_fused(f, v, r, g, rows, cols, false, seed++), test::kF32Tolerance) << name(f, v, r, g) << " " << rows << "x" << cols;
      }
}

// The head: asymmetric 4-bit with the final norm fused in (zero points and norm weight both bound).
TEST(MatvecQ4Fused, NormInputWithZeroPoints) {
  uint32_t seed = 900;
  for (auto v : {kernels::Q4Variant::carried, kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::shared_x})
    for (const auto& g : {MatvecGeometry{128, 16, 8, 1}, MatvecGeometry{64, 4, 3, 2}})
      EXPECT_LT(run_fused({false, true}, v, kernels::Reduction::best, g, 1001, 64, true, seed++), test::kF32Tolerance) << name({false, true}, v, kernels::Reduction::best, g);
}

// Seed shapes: gate_up 2 x 2560 x 1024 gated with the norm, the qkv-like 2048 x 1024 with the norm.
TEST(MatvecQ4Fused, SeedShapes) {
  EXPECT_LT(run_fused({true, true}, kernels::Q4Variant::v3_both, kernels::Reduction::best, {256, 32, 2, 1}, 2560, 1024, false, 11), test::kF32Tolerance);
  EXPECT_LT(run_fused({false, true}, kernels::Q4Variant::v3_both, kernels::Reduction::best, {256, 32, 2, 2}, 2048, 1024, false, 12), test::kF32Tolerance);
  EXPECT_LT(run_fused({true, true}, kernels::Q4Variant::shared_x, kernels::Reduction::best, {512, 32, 1, 1}, 2560, 1024, false, 13), test::kF32Tolerance);
}

// The conv-step output: W = [B; C; x] rows, one LFM2 short-conv decode step in the epilogue
// (y and the shifted state), with and without the norm prologue.
double run_conv(bool norm_input, kernels::Q4Variant variant, MatvecGeometry g, uint32_t rows, uint32_t cols, uint32_t seed) {
  auto& dev = test::test_device();
  auto host = reference::quantize_q4_symmetric(test::random_floats(size_t(3) * rows * cols, seed), 3 * rows, cols);
  auto x = test::random_floats(cols, seed + 1, 3.0f);
  auto norm_w = test::random_floats(cols, seed + 2);
  auto taps = test::random_floats(size_t(rows) * 3, seed + 3);
  auto state = test::random_floats(size_t(rows) * 2, seed + 4);
  auto input = norm_input ? reference::rmsnorm(x, norm_w, 1, cols, 1e-5f) : x;
  auto bcx = reference::matvec(reference::dequantize_q4(host), 3 * rows, cols, input);
  std::vector<float> ref(rows), ref_state(size_t(rows) * 2);
  for (uint32_t r = 0; r < rows; r++) {
    const float bx = bcx[r] * bcx[2 * rows + r];
    ref[r] = bcx[rows + r] * (taps[3 * r] * state[2 * r] + taps[3 * r + 1] * state[2 * r + 1] + taps[3 * r + 2] * bx);
    ref_state[2 * r] = state[2 * r + 1];
    ref_state[2 * r + 1] = bx;
  }
  auto w = test::upload_q4(host);
  gpu::Buffer xb = test::upload_floats(x, "x"), nb = test::upload_floats(norm_w, "norm_w"), tb = test::upload_floats(taps, "taps");
  gpu::Buffer sb = test::upload_floats(state, "state"), yb = test::upload_floats(std::vector<float>(rows, test::kPoison), "y");
  kernels::MatvecQ4 mv(test::test_kernels(),
                       {.rows = rows, .cols = cols, .variant = variant, .geometry = g, .conv = true, .norm_input = norm_input, .eps = 1e-5f});
  auto bound = mv.bind(w.matrix, {&xb}, {&yb}, norm_input ? gpu::Binding{&nb} : gpu::Binding{}, {&tb}, {&sb});
  gpu::Recorder rec(dev);
  mv.record(rec, bound);
  rec.submit();
  return std::max(test::rel_l2(dev.download_as<float>(yb), ref), test::rel_l2(dev.download_as<float>(sb), ref_state));
}

TEST(MatvecQ4Fused, ConvStepMatchesReference) {
  uint32_t seed = 1100;
  int i = 0;
  for (auto v : {kernels::Q4Variant::carried, kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::shared_x})
    for (const auto& g : {MatvecGeometry{256, 32, 2, 1}, MatvecGeometry{64, 4, 2, 2}}) {
      const bool norm = i++ % 2 == 0;
      for (auto [rows, cols] : std::vector<std::pair<uint32_t, uint32_t>>{{1, 32}, {45, 320}})
        EXPECT_LT(run_conv(norm, v, g, rows, cols, seed++), test::kF32Tolerance)
            << kernels::q4_variant_name(v) << (norm ? " norm" : "") << " wg" << g.workgroup_size << " " << rows << "x" << cols;
    }
  // conv_in_proj-like 3 x 1024 x 1024 with the norm, the tuned H200 geometry.
  EXPECT_LT(run_conv(true, kernels::Q4Variant::shared_x, {256, 16, 1, 2}, 1024, 1024, 1200), test::kF32Tolerance);
}

// The CPU adapters' default geometry (one subgroup-wide workgroup, 8 rows per lane group:
// llm::cpu_matvec_geometry on lavapipe) with every fusion, the head's zero points included, on
// shapes whose rows are not a multiple of 8.
TEST(MatvecQ4Fused, CpuGeometryMatchesReference) {
  uint32_t seed = 1300;
  const MatvecGeometry g{8, 8, 8, 1};
  for (const Fusion& f : kFusions)
    for (auto v : {kernels::Q4Variant::v3_both, kernels::Q4Variant::split_block, kernels::Q4Variant::carried})
      for (const auto& [rows, cols] : {std::pair<uint32_t, uint32_t>{13, 96}, {45, 320}})
        EXPECT_LT(run_fused(f, v, kernels::Reduction::best, g, rows, cols, false, seed++), test::kF32Tolerance) << name(f, v, kernels::Reduction::best, g) << " " << rows << "x" << cols;
  EXPECT_LT(run_fused({false, true}, kernels::Q4Variant::v3_both, kernels::Reduction::best, g, 1001, 64, true, seed++), test::kF32Tolerance);
  for (bool norm : {false, true}) EXPECT_LT(run_conv(norm, kernels::Q4Variant::v3_both, g, 45, 320, seed++), test::kF32Tolerance) << norm;
}

TEST(MatvecQ4Fused, BadOptionsAreClearErrors) {
  auto& k = test::test_kernels();
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 8, .cols = 64, .mode = kernels::OutputMode::accumulate, .gated = true}), Error);
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 8, .cols = 64, .asymmetric = true, .gated = true}), Error);
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 8, .cols = 64, .norm_input = true, .eps = 0.0f}), Error);
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 8, .cols = 64, .mode = kernels::OutputMode::accumulate, .conv = true}), Error);
  EXPECT_THROW(kernels::MatvecQ4(k, {.rows = 8, .cols = 64, .gated = true, .conv = true}), Error);
  kernels::MatvecQ4 gated(k, {.rows = 8, .cols = 64, .gated = true});
  auto w8 = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(8 * 64, 1), 8, 64));
  auto w16 = test::upload_q4(reference::quantize_q4_symmetric(test::random_floats(16 * 64, 2), 16, 64));
  gpu::Buffer v = test::upload_floats(std::vector<float>(64), "v");
  EXPECT_THROW(gated.bind(w8.matrix, {&v}, {&v}), Error);  // a gated matvec needs 2 * rows
  EXPECT_NO_THROW(gated.bind(w16.matrix, {&v}, {&v}));
  EXPECT_THROW(gated.bind(w16.matrix, {&v}, {&v}, {&v}), Error);  // a norm weight without norm_input
  kernels::MatvecQ4 normed(k, {.rows = 8, .cols = 64, .norm_input = true});
  EXPECT_THROW(normed.bind(w8.matrix, {&v}, {&v}), Error);  // norm_input needs its weight
  EXPECT_NO_THROW(normed.bind(w8.matrix, {&v}, {&v}, {&v}));
}
