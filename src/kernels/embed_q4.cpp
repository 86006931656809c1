#include "kernels/embed_q4.h"

#include "common/error.h"
#include "kernels/step.h"

namespace ember::kernels {
namespace {

// Mirrors `Params` in embed_q4.wgsl.
struct EmbedParams {
  uint32_t rows, cols, pad, tokens;
};
static_assert(sizeof(EmbedParams) == 16);

}  // namespace

EmbedQ4::EmbedQ4(gpu::KernelCache& kernels, const EmbedConfig& config) : kernels_(kernels), config_(config) {
  const std::string where = "embed_q4 " + std::to_string(config.rows) + "x" + std::to_string(config.cols);
  if (config.rows == 0 || config.cols == 0 || config.cols % 32 != 0)
    throw Error("shape " + std::to_string(config.rows) + "x" + std::to_string(config.cols) + " is not supported", where,
                "rows >= 1 and cols a positive multiple of 32");
  if (config.workgroup_size == 0 || config.workgroup_size > kernels.device().limits().maxComputeInvocationsPerWorkgroup)
    throw Error("workgroup size " + std::to_string(config.workgroup_size) + " is out of range", where, "use 32..256");
  gpu::KernelKey key{.file = "embed_q4.wgsl", .constants = {{"WG", config.workgroup_size}}};
  if (config.asymmetric) key.defines.insert("ASYMMETRIC");
  kernel_ = &kernels.get(key);
  key.entry = "decode";
  key.defines.insert("ADVANCE_STEP");
  decode_kernel_ = &kernels.get(key);
}

Bound EmbedQ4::bind(const Q4Matrix& w, gpu::Binding ids, gpu::Binding out, uint32_t tokens) const {
  const std::string where = kernel_->label();
  if (tokens == 0) throw Error("token count is 0", where, "bind at least one token");
  if (tokens > kernels_.device().limits().maxComputeWorkgroupsPerDimension)
    throw Error(std::to_string(tokens) + " tokens exceed maxComputeWorkgroupsPerDimension", where, "embed in chunks");
  check_q4_matrix(w, config_.rows, config_.cols, config_.asymmetric, where);
  require_binding(ids, uint64_t(tokens) * 4, "ids", where);
  require_binding(out, uint64_t(tokens) * config_.cols * 4, "out", where);
  Bound b;
  b.params = kernels_.device().create_uniform(EmbedParams{config_.rows, config_.cols, 0, tokens}, "embed_q4 params");
  std::vector<gpu::Binding> bindings{w.quant, w.scales, ids, out, {&b.params}};
  if (config_.asymmetric) bindings.push_back(w.zero_points);
  b.group = kernels_.bind(*kernel_, bindings);
  b.groups_x = (config_.cols / 8 + config_.workgroup_size - 1) / config_.workgroup_size;
  b.groups_y = tokens;
  return b;
}

Dispatch EmbedQ4::bind_decode(const Q4Matrix& w, gpu::Binding ids, gpu::Binding step, gpu::Binding out) const {
  const std::string where = decode_kernel_->label();
  check_q4_matrix(w, config_.rows, config_.cols, config_.asymmetric, where);
  require_binding(ids, 4, "ids", where);
  require_binding(step, sizeof(StepParams), "step", where);
  require_binding(out, uint64_t(config_.cols) * 4, "out", where);
  Dispatch d;
  d.kernel = decode_kernel_;
  d.params = kernels_.device().create_uniform(EmbedParams{config_.rows, config_.cols, 0, 1}, "embed_q4 params");
  std::vector<gpu::Binding> bindings{w.quant, w.scales, ids, out, {&d.params}};
  if (config_.asymmetric) bindings.push_back(w.zero_points);
  bindings.push_back(step);
  d.group = kernels_.bind(*decode_kernel_, bindings);
  return d;  // one workgroup
}

void EmbedQ4::record(gpu::Recorder& rec, const Bound& bound) const {
  rec.dispatch(*kernel_, bound.group, bound.groups_x, bound.groups_y);
}

}  // namespace ember::kernels
