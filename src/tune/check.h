// What every tuner search compares candidates by: fresh random inputs and the rel L2 distance
// to the reference configuration's output (docs/architecture.md's one accuracy measure).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ember::tune {

constexpr double kRejectRelL2 = 1e-5;  // f32 kernels: anything further is a wrong configuration
// f16 arithmetic (an 11-bit significand, ~5e-4 a rounding): the fused MLP's f16 options stay
// within a few times that of the f32 reference; a wrong kernel is far above.
constexpr double kHalfRejectRelL2 = 5e-3;

inline std::vector<float> random_input(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline double rel_l2(const std::vector<float>& got, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size() && i < got.size(); i++) {
    double d = double(got[i]) - ref[i];
    num += d * d;
    den += double(ref[i]) * ref[i];
  }
  if (got.size() != ref.size() || std::isnan(num)) return INFINITY;
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

}  // namespace ember::tune
