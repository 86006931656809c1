#include "kernels/lfm2/residual_mlp_q4.h"

#include <algorithm>
#include <bit>

#include "common/error.h"

namespace ember::kernels {
namespace {

struct ResidualMlpParams {  // mirrors `Params` in residual_mlp_q4.wgsl
  float eps;
  uint32_t never, pf_quant_len, pf_scales_len;
  uint32_t quant_at[4], scales_at[4];
  uint32_t status_at, pad[3];
};
static_assert(sizeof(ResidualMlpParams) == 64);

constexpr uint32_t kMaxHeld = 8;    // MAX_HELD in the kernel
constexpr uint32_t kMaxPieces = 4;  // MAX_PIECES
constexpr uint32_t kBindings = 6;   // storage buffers the kernel binds

}  // namespace

ResidualMlpQ4::ResidualMlpQ4(gpu::KernelCache& kernels, const ResidualMlpConfig& c) : kernels_(kernels), config_(c) {
  const gpu::Device& device = kernels.device();
  const std::string where = "residual_mlp_q4 hidden " + std::to_string(c.hidden) + " ffn " + std::to_string(c.ffn);
  auto fail = [&](const std::string& what, const std::string& fix) { throw Error(what, where, fix); };
  if (c.hidden == 0 || c.hidden % 32 != 0 || c.proj_cols == 0 || c.proj_cols % 32 != 0 || c.ffn == 0 || c.ffn % 4 != 0)
    fail("shape hidden " + std::to_string(c.hidden) + ", proj_cols " + std::to_string(c.proj_cols) + ", ffn " + std::to_string(c.ffn) +
             " is not supported",
         "hidden and proj_cols positive multiples of 32, ffn a positive multiple of 4");
  const uint32_t wg = c.workgroup_size, lanes = c.lanes;
  if (!std::has_single_bit(wg) || lanes == 0 || !std::has_single_bit(lanes) || wg % lanes != 0)
    fail("workgroup " + std::to_string(wg) + " with " + std::to_string(lanes) + " lanes per row is not a valid geometry",
         "a power-of-two workgroup size and lanes a power of two dividing it");
  if (c.workgroups == 0) fail("a grid of 0 workgroups", "give residualMlpWorkgroups >= 1 (or leave the fusion off)");
  const WGPULimits& lim = device.limits();
  if (wg > lim.maxComputeInvocationsPerWorkgroup || wg > lim.maxComputeWorkgroupSizeX)
    fail("workgroup " + std::to_string(wg) + " exceeds this device's limit", "use a smaller workgroup");
  if (c.workgroups > lim.maxComputeWorkgroupsPerDimension) fail("too many workgroups", "use at most maxComputeWorkgroupsPerDimension");
  if (lim.maxStorageBuffersPerShaderStage < kBindings)
    fail("the kernel binds " + std::to_string(kBindings) + " storage buffers; this device allows " + std::to_string(lim.maxStorageBuffersPerShaderStage),
         "leave the fusion off on this device");
  if (c.prefetch_stage > 2) fail("prefetch stage " + std::to_string(c.prefetch_stage), "give a stage 0, 1 or 2");
  const uint32_t widest = std::max({c.proj_cols, c.hidden, c.ffn});
  // Blocks a lane holds: ceil(blocks / lanes) per weight row, two rows (gate and up) in stage 1.
  auto held = [&](uint32_t cols, uint32_t rows) { return (cols / 32 + lanes - 1) / lanes * rows; };
  if (std::max({held(c.proj_cols, 1), held(c.hidden, 2), held(c.ffn, 1)}) > kMaxHeld || c.ffn % 32 != 0)
    fail("a lane would hold more than " + std::to_string(kMaxHeld) + " weight blocks (or ffn is not a multiple of 32)",
         "use more lanes per row");
  if (c.ffn / 4 > kMaxPieces * wg || c.hidden / 4 > kMaxPieces * wg)
    fail("an input would need more than " + std::to_string(kMaxPieces) + " pieces per lane", "use a larger workgroup");
  const uint64_t shared = uint64_t(widest) * 4 + uint64_t(c.hidden) * 4 + 3ull * wg * 4;  // staged input, m, row partials, reduce.wgsl's partials
  if (shared > lim.maxComputeWorkgroupStorageSize)
    fail("needs " + std::to_string(shared) + " bytes of workgroup memory, above the device's " + std::to_string(lim.maxComputeWorkgroupStorageSize),
         "use a smaller workgroup");
  const uint32_t spin_limit = c.spin_limit != 0 ? c.spin_limit : device.adapter().type == "CPU" ? 1u << 24 : 1u << 20;
  gpu::KernelKey key{.file = "residual_mlp_q4.wgsl",
                     .constants = {{"WG", wg},
                                   {"L", lanes},
                                   {"H", c.hidden},
                                   {"F", c.ffn},
                                   {"CO", c.proj_cols},
                                   {"SPIN", spin_limit},
                                   {"SLACK", c.wait_slack.value_or(c.workgroups / 4)},
                                   {"XS", widest / 4}}};
  if (use_subgroups(device, c.reduction, where)) key.defines.insert("SUBGROUPS");
  if (c.prefetch) {
    key.defines.insert("PREFETCH");
    key.constants.push_back({"PF_STAGE", c.prefetch_stage});
  }
  kernel_ = &kernels.get(key);
}

uint64_t ResidualMlpQ4::scratch_bytes() const { return status_offset() + 16; }
uint64_t ResidualMlpQ4::status_offset() const { return (uint64_t(config_.hidden) + config_.ffn) * 4; }
uint64_t ResidualMlpQ4::stall_offset() const { return status_offset() + 12; }

void ResidualMlpQ4::stall_for_tests(const gpu::Binding& scratch, bool stall) const {
  const uint32_t word = stall ? 1 : 0;
  kernels_.device().upload(*scratch.buffer, std::span<const uint32_t>(&word, 1), scratch.offset + stall_offset());
}

Bound ResidualMlpQ4::bind(const Q4Matrix& proj, const Q4Matrix& gate_up, const Q4Matrix& down, gpu::Binding y, gpu::Binding x,
                          gpu::Binding norm_weight, gpu::Binding scratch, gpu::Binding step, const Q4Matrix* next,
                          std::optional<uint64_t> status_at) const {
  const ResidualMlpConfig& c = config_;
  const std::string where = kernel_->label();
  check_q4_matrix(proj, c.hidden, c.proj_cols, false, where);
  check_q4_matrix(gate_up, 2 * c.ffn, c.hidden, false, where);
  check_q4_matrix(down, c.hidden, c.ffn, false, where);
  require_binding(y, uint64_t(c.proj_cols) * 4, "y", where);
  require_binding(x, uint64_t(c.hidden) * 4, "x", where);
  require_binding(norm_weight, uint64_t(c.hidden) * 4, "norm weight", where);
  const uint64_t status = status_at.value_or(status_offset());
  if (status % 4 != 0 || (status != status_offset() && status < scratch_bytes()))
    throw Error("status word at byte " + std::to_string(status) + " of the scratch", where, "give the status offset of a word of its own");
  require_binding(scratch, std::max(scratch_bytes(), status + 4), "scratch", where);
  require_binding(step, 16, "step", where);
  if (next && !c.prefetch)
    throw Error("a prefetch matrix was bound to a residual MLP without prefetch", where, "set ResidualMlpConfig::prefetch");
  // The one range of the weights buffer that holds every part: quant as 16-byte words, scales as floats.
  std::vector<gpu::Binding> parts{proj.quant, proj.scales, gate_up.quant, gate_up.scales, down.quant, down.scales};
  if (next) parts.insert(parts.end(), {next->quant, next->scales});
  const gpu::Device& device = kernels_.device();
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const gpu::Binding& part : parts) {
    if (part.buffer != proj.quant.buffer)
      throw Error("the matrices are in different buffers", where, "place every matrix (and the one to read ahead) in one weights buffer");
    if (part.offset % 16 != 0) throw Error("a matrix part starts at byte " + std::to_string(part.offset), where, "place each part at a multiple of 16 bytes");
    lo = std::min(lo, part.offset);
    hi = std::max(hi, part.offset + binding_bytes(part));
  }
  lo -= lo % device.limits().minStorageBufferOffsetAlignment;
  hi = std::min((hi + 15) / 16 * 16, proj.quant.buffer->size());
  if (hi - lo > device.limits().maxStorageBufferBindingSize)
    throw Error("the matrices span " + std::to_string(hi - lo) + " bytes, above this device's maxStorageBufferBindingSize", where,
                "place the matrices nearer each other in the weights buffer");
  ResidualMlpParams params{.eps = c.eps, .never = 0, .pf_quant_len = 0, .pf_scales_len = 0, .quant_at = {}, .scales_at = {},
                           .status_at = static_cast<uint32_t>(status / 4), .pad = {}};
  for (size_t i = 0; i < parts.size() / 2; i++) {
    params.quant_at[i] = static_cast<uint32_t>((parts[2 * i].offset - lo) / 16);
    params.scales_at[i] = static_cast<uint32_t>((parts[2 * i + 1].offset - lo) / 4);
  }
  if (next) {
    params.pf_quant_len = static_cast<uint32_t>(binding_bytes(next->quant) / 16);
    params.pf_scales_len = static_cast<uint32_t>(binding_bytes(next->scales) / 16);
  }
  Bound b;
  b.params = device.create_uniform(params, "residual_mlp_q4 params");
  const gpu::Binding weights{proj.quant.buffer, lo, hi - lo};
  b.group = kernels_.bind(*kernel_, {weights, weights, y, x, norm_weight, scratch, step, {&b.params}});
  b.groups_x = c.workgroups;
  return b;
}

void ResidualMlpQ4::record(gpu::Recorder& rec, const Bound& bound) const { rec.dispatch(*kernel_, bound.group, bound.groups_x, 1); }

}  // namespace ember::kernels
