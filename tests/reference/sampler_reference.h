// CPU reference of the sampling distribution, in the order of Hugging Face's logits processors:
// repetition penalty, temperature, top-k, top-p, min-p; then the renormalised distribution.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

namespace ember::reference {

struct SamplingSettings {
  float temperature = 1, top_p = 1, min_p = 0, repetition_penalty = 1;
  uint32_t top_k = 0;  // 0 = off
};

inline std::vector<double> penalized_logits(const std::vector<float>& logits, const std::vector<uint32_t>& recent,
                                            float penalty) {
  std::vector<double> v(logits.begin(), logits.end());
  for (uint32_t id : std::set<uint32_t>(recent.begin(), recent.end()))
    v[id] = v[id] < 0 ? v[id] * penalty : v[id] / penalty;
  return v;
}

// Greedy: argmax of the penalised logits, ties to the lowest id.
inline uint32_t greedy(const std::vector<float>& logits, const std::vector<uint32_t>& recent, float penalty) {
  auto v = penalized_logits(logits, recent, penalty);
  return uint32_t(std::max_element(v.begin(), v.end()) - v.begin());  // first maximum
}

// Probability of every id.
inline std::vector<double> sampling_distribution(const std::vector<float>& logits, const std::vector<uint32_t>& recent,
                                                 const SamplingSettings& s) {
  auto v = penalized_logits(logits, recent, s.repetition_penalty);
  const size_t n = v.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return v[a] > v[b]; });
  size_t keep = s.top_k ? std::min<size_t>(s.top_k, n) : n;
  std::vector<double> p(n, 0.0);
  double total = 0;
  for (size_t i = 0; i < keep; i++) total += (p[order[i]] = std::exp((v[order[i]] - v[order[0]]) / s.temperature));
  if (s.top_p < 1) {  // keep while the mass before a token is below top_p
    double before = 0;
    size_t k = 1;
    for (size_t i = 1; i < keep; i++) {
      before += p[order[i - 1]] / total;
      if (before >= s.top_p) break;
      k = i + 1;
    }
    keep = k;
  }
  if (s.min_p > 0) {  // relative to the most likely token (p[order[0]] is 1 here)
    size_t k = 1;
    for (size_t i = 1; i < keep; i++)
      if (p[order[i]] >= s.min_p) k = i + 1;
    keep = k;
  }
  for (size_t i = keep; i < n; i++) p[order[i]] = 0;
  double kept = 0;
  for (size_t i = 0; i < keep; i++) kept += p[order[i]];
  for (auto& x : p) x /= kept;
  return p;
}

}  // namespace ember::reference
