#include "kernels/logprobs.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "kernels/q4_matrix.h"

namespace ember::kernels {

Logprobs::Logprobs(gpu::KernelCache& kernels) : kernels_(kernels) {
  kernel_ = &kernels.get({.file = "logprobs.wgsl", .constants = {{"WG", 256}}});
}

gpu::BindGroup Logprobs::bind(gpu::Binding logits, gpu::Binding tokens, gpu::Binding params, gpu::Binding out) const {
  require_binding(params, sizeof(LogprobParams), "params", "Logprobs");
  require_binding(out, kOutBytes, "out", "Logprobs");
  return kernels_.bind(*kernel_, {logits, tokens, params, out});
}

void Logprobs::record(gpu::Recorder& rec, const gpu::BindGroup& group) const { rec.dispatch(*kernel_, group, 1); }

TopLogprobs Logprobs::unpack(std::span<const uint32_t> words, uint32_t top) {
  if (words.size() < kOutBytes / 4) throw Error("logprob output of " + std::to_string(words.size()) + " words", "Logprobs");
  auto f32 = [](uint32_t w) {
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  };
  // A masked id's logit sits near -3.4e38 (logit_edit.wgsl): no real alternative.
  constexpr float kMasked = -1e37f;
  TopLogprobs r{words[1], f32(words[0]), {}};
  for (uint32_t i = 0; i < std::min(top, kMaxTop); i++) {
    const float lp = f32(words[2 + 2 * i]);
    if (lp > kMasked) r.top.emplace_back(words[3 + 2 * i], lp);
  }
  return r;
}

}  // namespace ember::kernels
