#include "kernels/logit_edit.h"

#include <cstring>

#include "common/error.h"
#include "kernels/q4_matrix.h"
#include "kernels/step.h"

namespace ember::kernels {

namespace {
constexpr uint32_t kWg = 256;
}

LogitEdit::LogitEdit(gpu::KernelCache& kernels, uint32_t vocab) : kernels_(kernels), vocab_(vocab) {
  if (vocab == 0) throw Error("an empty vocabulary", "LogitEdit");
  bias_ = &kernels.get({.file = "logit_edit.wgsl", .entry = "bias", .constants = {{"WG", kWg}}});
  mask_ = &kernels.get({.file = "logit_edit.wgsl", .entry = "mask", .constants = {{"WG", kWg}}});
}

std::vector<uint32_t> LogitEdit::pack(std::span<const uint32_t> mask, const std::vector<std::pair<uint32_t, float>>& bias) const {
  if (!mask.empty() && mask.size() != mask_words())
    throw Error("a mask of " + std::to_string(mask.size()) + " words for " + std::to_string(mask_words()), "LogitEdit");
  if (bias.size() > kMaxBias) throw Error("more than " + std::to_string(kMaxBias) + " logit biases", "LogitEdit");
  const uint32_t start = 4 + mask_words();
  std::vector<uint32_t> w(start + 2 * bias.size(), 0);
  w[0] = vocab_;
  w[1] = mask.empty() ? 0 : 1;
  w[2] = static_cast<uint32_t>(bias.size());
  w[3] = start;
  if (!mask.empty()) std::memcpy(w.data() + 4, mask.data(), mask.size_bytes());
  for (size_t i = 0; i < bias.size(); i++) {
    w[start + 2 * i] = bias[i].first;
    std::memcpy(&w[start + 2 * i + 1], &bias[i].second, 4);
  }
  return w;
}

LogitEdit::Groups LogitEdit::bind(gpu::Binding logits, gpu::Binding edit) const {
  require_binding(logits, uint64_t(vocab_) * 4, "logits", "LogitEdit");
  require_binding(edit, buffer_bytes(), "edit", "LogitEdit");
  return {kernels_.bind(*bias_, {logits, edit}), kernels_.bind(*mask_, {logits, edit})};
}

void LogitEdit::record(gpu::Recorder& rec, const Groups& groups, bool mask, uint32_t biases) const {
  if (biases) rec.dispatch(*bias_, groups.bias, (biases + kWg - 1) / kWg);
  if (mask) rec.dispatch(*mask_, groups.mask, checked_groups(kernels_.device(), (vocab_ + kWg - 1) / kWg, "LogitEdit"));
}

}  // namespace ember::kernels
