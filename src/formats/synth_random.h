// The random numbers of synthetic checkpoints (`ember synth ...`): the same on every platform for a
// seed, so a test's weights and a golden made elsewhere agree.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace ember::formats {

// Box-Muller over mt19937_64 words (std::normal_distribution is implementation-defined).
class SynthGaussian {
 public:
  explicit SynthGaussian(uint64_t seed) : rng_(seed) {}
  float operator()(float mean, float stddev) {
    double u1 = (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    double u2 = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    return static_cast<float>(mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace ember::formats
