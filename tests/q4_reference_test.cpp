// The q4 reference itself: packing layout, rounding bounds and the k-major relation.
#include <gtest/gtest.h>

#include <cmath>

#include "gpu_fixture.h"
#include "reference/q4_reference.h"

using namespace ember;

TEST(Q4Reference, PacksElementsAsTheFormatSays) {
  // Row 1, column 37 of a [2][64] matrix is element 101: nibble 5 of word 12.
  std::vector<float> w(2 * 64, 0.0f);
  w[64 + 32] = 7.0f;   // block (1, 1) gets scale 1
  w[64 + 37] = -3.0f;  // q = -3 + 8 = 5
  auto m = reference::quantize_q4_symmetric(w, 2, 64);
  EXPECT_EQ((m.quant[12] >> 20) & 0xF, 5u);
  EXPECT_EQ(reference::q4_nibble(m.quant, 101), 5u);
  EXPECT_FLOAT_EQ(m.scales[3], 1.0f);
  EXPECT_FLOAT_EQ(reference::dequantize_q4(m)[101], -3.0f);
}

TEST(Q4Reference, RoundingErrorIsAtMostHalfAStep) {
  for (bool asym : {false, true}) {
    auto w = test::random_floats(7 * 96, asym ? 2 : 1);
    auto m = asym ? reference::quantize_q4_asymmetric(w, 7, 96) : reference::quantize_q4_symmetric(w, 7, 96);
    EXPECT_EQ(m.asymmetric(), asym);
    auto d = reference::dequantize_q4(m);
    for (size_t i = 0; i < w.size(); i++) EXPECT_LE(std::fabs(d[i] - w[i]), 0.5f * m.scales[i / 32] * 1.0001f) << i;
  }
}

TEST(Q4Reference, KMajorIsTheTransposedMatrix) {
  auto w = test::random_floats(64 * 8, 3);  // [64 outputs][8 inputs]
  auto k = reference::quantize_q4_kmajor(w, 64, 8);
  EXPECT_EQ(k.rows, 8u);
  EXPECT_EQ(k.cols, 64u);
  auto back = reference::transpose(reference::dequantize_q4(k), 8, 64);
  EXPECT_LT(test::rel_l2(back, w), 0.1);
}

TEST(Q4Reference, ConstantBlocksSurviveAsymmetricQuantization) {
  std::vector<float> w(32, 0.25f);
  w.resize(64, 0.0f);
  auto d = reference::dequantize_q4(reference::quantize_q4_asymmetric(w, 1, 64));
  for (size_t i = 0; i < 64; i++) EXPECT_FLOAT_EQ(d[i], w[i]) << i;
}
