// The device tests share: one per test process, on the default adapter (lavapipe in CI).
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "gpu/device.h"
#include "gpu/kernel.h"

namespace ember::test {

inline gpu::Device& test_device() {
  // Exact timestamps, as ember tune and bench open theirs: rounded ones read 0 us for the short
  // dispatches the tuner tests time on a fast CPU.
  static gpu::Device device = gpu::Device::open({.profiling = true});
  return device;
}

inline gpu::KernelCache& test_kernels() {
  static gpu::KernelCache cache(test_device());
  return cache;
}

// ||a - b|| / ||b||: the one accuracy measure of docs/architecture.md.
inline double rel_l2(const std::vector<float>& got, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); i++) {
    double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

// Named tolerances (docs/architecture.md: tests).
constexpr double kF32Tolerance = 1e-5;
constexpr double kF16Tolerance = 1e-3;

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// A value no kernel writes by accident: outputs are filled with it before a run, so elements a
// kernel forgot to write fail the comparison.
inline constexpr float kPoison = 1.0e30f;

}  // namespace ember::test
