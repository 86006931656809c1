#include "kernels/attention.h"

#include <bit>
#include <cmath>

#include "common/error.h"
#include "kernels/step.h"

namespace ember::kernels {
namespace {

AttentionConfig checked(const AttentionConfig& in, const std::string& where) {
  AttentionConfig c = in;
  if (c.heads == 0 || c.kv_heads == 0 || c.head_dim == 0 || c.heads % c.kv_heads != 0)
    throw Error("heads, kv_heads and head_dim must be positive, heads a multiple of kv_heads", where);
  if (c.q_stride == 0) c.q_stride = c.heads * c.head_dim;
  if (c.scale == 0) c.scale = float(1.0 / std::sqrt(double(c.head_dim)));
  return c;
}

AttentionParams params_of(const AttentionConfig& c) {
  return {c.heads, c.kv_heads, c.head_dim, c.head_dim + c.padding, c.q_stride, c.q_offset, c.scale, c.seq_stride, c.k_offset, c.v_offset, c.eps, 0};
}

// The quad kernels read q and cache rows as vec4.
bool rows_aligned(const AttentionParams& p) {
  return p.row % 4 == 0 && p.q_stride % 4 == 0 && p.q_offset % 4 == 0 && p.seq_stride % 4 == 0 && p.k_offset % 4 == 0 &&
         p.v_offset % 4 == 0;
}

}  // namespace

uint32_t widest_direct_workgroup(const gpu::Device& device) {
  return std::min<uint32_t>(1024, device.limits().maxComputeInvocationsPerWorkgroup);
}

bool direct_workgroup_fits(uint32_t threads, uint32_t tile_workgroup, const gpu::Device& device) {
  return threads >= tile_workgroup && threads <= widest_direct_workgroup(device) && (threads & (threads - 1)) == 0;
}

AttentionDecode::AttentionDecode(gpu::KernelCache& kernels, const AttentionConfig& config)
    : kernels_(kernels), config_(checked(config, "AttentionDecode")) {
  const uint32_t wg = config_.workgroup;
  if ((wg & (wg - 1)) != 0 || wg > 1024 || config_.head_dim > 4 * wg)
    throw Error("workgroup must be a power of two <= 1024 with head_dim <= 4 * workgroup", "AttentionDecode");
  if (config_.max_blocks == 0 || config_.max_sequences == 0) throw Error("max_blocks and max_sequences must be positive", "AttentionDecode");
  if (config_.max_blocks > 4096) throw Error("max_blocks " + std::to_string(config_.max_blocks) + " above 4096", "AttentionDecode");
  if (config_.subgroups && !kernels.device().has_subgroups())
    throw Error("subgroup variant requested but the device has no subgroups", "AttentionDecode",
                "use the shared variant");
  gpu::KernelKey key{.file = "attention_decode.wgsl", .constants = {{"WG", wg}, {"MAXD", config_.head_dim}}};
  if (config_.subgroups) key.defines.insert("SUBGROUPS");
  if (config_.norm_rope_kv && !(config_.eps > 0)) throw Error("norm_rope_kv needs eps > 0", "AttentionDecode");
  gpu::KernelKey direct = key;
  direct_threads_ = wg;
  // Head size 64 on 16-byte aligned rows: the quad kernel (a key per 4 lanes, dims in registers).
  const gpu::Device& device = kernels.device();
  const bool aligned = rows_aligned(params_of(config_));
  const uint32_t sg_min = device.subgroup_size(), sg_max = device.adapter().subgroup_max;
  if (config_.subgroups && config_.head_dim == 64 && aligned && wg >= std::max(16u, sg_max) && sg_min % 4 == 0) {
    key.file = direct.file = "attention_decode_quad.wgsl";
    key.constants = {{"WG", wg}, {"SG_MIN", sg_min}};
    // One block (DIRECT) runs one workgroup per head, wide so that its quads cover a long context
    // in a short chain (the merge buffer is WG / SG_MIN x 264 bytes), but not so wide that a lane's
    // K/V rows in flight spill: the adapter's widest workgroup measured clearly slower than 512
    // threads, alone and in the decode step (bench/PERFORMANCE.md).
    const uint32_t widest = widest_direct_workgroup(device);
    uint32_t direct_wg = config_.direct_workgroup ? config_.direct_workgroup : std::max(wg, std::min(kDefaultDirectWorkgroup, widest));
    if (!direct_workgroup_fits(direct_wg, wg, device))
      throw Error("direct_workgroup " + std::to_string(direct_wg) + " must be a power of two in " + std::to_string(wg) + ".." +
                      std::to_string(widest) + " (the tile workgroup .. the adapter's limit)",
                  "AttentionDecode", "use 0 for the default");
    while (direct_wg > wg && uint64_t(direct_wg) / sg_min * (256 + 8) > device.limits().maxComputeWorkgroupStorageSize) direct_wg /= 2;
    direct.constants = {{"WG", direct_wg}, {"SG_MIN", sg_min}};
    direct_threads_ = direct_wg;
    if (config_.norm_rope_kv) {
      key.defines.insert("NORM_ROPE_KV");
      direct.defines.insert("NORM_ROPE_KV");
    }
  } else if (config_.subgroups && wg < sg_max) {
    // attention_decode.wgsl walks a tile's keys WG / subgroup size at a time.
    throw Error("workgroup " + std::to_string(wg) + " is below the adapter's largest subgroup (" + std::to_string(sg_max) + ")",
                "AttentionDecode", "use a larger workgroup or the shared variant");
  }
  if (key.file != "attention_decode_quad.wgsl") config_.norm_rope_kv = false;  // the general kernel reads normed q/k
  direct.defines.insert("DIRECT");
  partials_kernel_ = &kernels.get(key);
  direct_kernel_ = &kernels.get(direct);
  // The combine splits a head's dims over its B workgroups, ceil(head_dim / 2) at most (B >= 2).
  const uint32_t combine_wg = std::max<uint32_t>(64, std::bit_ceil((config_.head_dim + 1) / 2));
  if (combine_wg > 1024) throw Error("head_dim " + std::to_string(config_.head_dim) + " above 2048", "AttentionDecode");
  combine_kernel_ = &kernels.get({.file = "attention_combine.wgsl", .constants = {{"WG", combine_wg}, {"MAXB", config_.max_blocks}}});
  params_ = kernels.device().create_uniform(params_of(config_), "attention params");
  partials_ = kernels.device().create_storage(
      uint64_t(config_.max_sequences) * config_.heads * config_.max_blocks * (config_.head_dim + 2) * 4, "attention partials");
}

AttentionDecode::Groups AttentionDecode::bind(gpu::Binding q, gpu::Binding k_cache, gpu::Binding v_cache,
                                              gpu::Binding out, gpu::Binding step) const {
  if (config_.norm_rope_kv) throw Error("this attention applies the q/k norms and RoPE: bind it with their weights and tables", "AttentionDecode::bind");
  return {kernels_.bind(*partials_kernel_, {q, k_cache, v_cache, {&partials_}, {&params_}, step}),
          kernels_.bind(*combine_kernel_, {{&partials_}, out, {&params_}, step}),
          kernels_.bind(*direct_kernel_, {q, k_cache, v_cache, out, {&params_}, step})};
}

AttentionDecode::Groups AttentionDecode::bind(gpu::Binding q, gpu::Binding k_cache, gpu::Binding v_cache, gpu::Binding out,
                                              gpu::Binding step, const NormRope& nr) const {
  if (!config_.norm_rope_kv) throw Error("this attention reads normed q/k: bind it without norm weights", "AttentionDecode::bind");
  return {kernels_.bind(*partials_kernel_, {q, k_cache, v_cache, {&partials_}, {&params_}, step, nr.q_norm, nr.k_norm, nr.cos, nr.sin}),
          kernels_.bind(*combine_kernel_, {{&partials_}, out, {&params_}, step}),
          kernels_.bind(*direct_kernel_, {q, k_cache, v_cache, out, {&params_}, step, nr.q_norm, nr.k_norm, nr.cos, nr.sin})};
}

void AttentionDecode::record(gpu::Recorder& rec, const Groups& groups, uint32_t blocks, uint32_t sequences) const {
  if (blocks == 0 || blocks > config_.max_blocks)
    throw Error("block count " + std::to_string(blocks) + " outside 1.." + std::to_string(config_.max_blocks),
                "AttentionDecode::record", "raise max_blocks in the config");
  if (sequences == 0 || sequences > config_.max_sequences)
    throw Error(std::to_string(sequences) + " sequences outside 1.." + std::to_string(config_.max_sequences), "AttentionDecode::record",
                "raise max_sequences in the config");
  if (blocks == 1) {  // nothing to merge: one dispatch writes the output
    rec.dispatch(*direct_kernel_, groups.direct, 1, config_.heads, sequences);
    return;
  }
  rec.dispatch(*partials_kernel_, groups.partials, blocks, config_.heads, sequences);
  rec.dispatch(*combine_kernel_, groups.combine, blocks, config_.heads, sequences);
}

AttentionPrefill::AttentionPrefill(gpu::KernelCache& kernels, const AttentionConfig& config)
    : kernels_(kernels), config_(checked(config, "AttentionPrefill")) {
  const uint64_t bq = config_.query_tile, bk = config_.key_tile;
  if (config_.head_dim > 64)
    throw Error("head_dim " + std::to_string(config_.head_dim) + " above 64 (queries live in 16 vec4 registers)",
                "AttentionPrefill");
  if (bq == 0 || bq > 1024) throw Error("query_tile (threads, one query each) must be in 1..1024", "AttentionPrefill");
  if (bk == 0 || bk % 8 != 0) throw Error("key_tile must be a positive multiple of 8", "AttentionPrefill");
  const uint64_t bytes = 2 * bk * 64 * 4;  // K and V tiles of bk zero-padded 64-wide rows
  if (bytes > kernels.device().limits().maxComputeWorkgroupStorageSize)
    throw Error("tiles need " + std::to_string(bytes) + " bytes of workgroup memory, the adapter has " +
                    std::to_string(kernels.device().limits().maxComputeWorkgroupStorageSize),
                "AttentionPrefill", "use a smaller key_tile");
  if (config_.subgroups && !kernels.device().has_subgroups())
    throw Error("subgroup variant requested but the device has no subgroups", "AttentionPrefill",
                "use the shared variant");
  // Head size 64 on 16-byte aligned rows with subgroups: the quad kernel (4 queries per 4 lanes).
  const bool quad = config_.subgroups && config_.head_dim == 64 && rows_aligned(params_of(config_)) && kernels.device().subgroup_size() % 4 == 0;
  if (quad && bq % 4 != 0) throw Error("query_tile must be a multiple of 4 for the quad kernel", "AttentionPrefill");
  kernel_ = &kernels.get({.file = quad ? "attention_prefill_quad.wgsl" : "attention_prefill.wgsl",
                          .constants = {{"BQ", bq}, {"BK", bk}}});
  params_ = kernels.device().create_uniform(params_of(config_), "attention params");
}

gpu::BindGroup AttentionPrefill::bind(gpu::Binding q, gpu::Binding k_cache, gpu::Binding v_cache, gpu::Binding out,
                                      gpu::Binding step) const {
  return kernels_.bind(*kernel_, {q, k_cache, v_cache, out, {&params_}, step});
}

void AttentionPrefill::record(gpu::Recorder& rec, const gpu::BindGroup& group, uint32_t T) const {
  if (T == 0) return;
  rec.dispatch(*kernel_, group, checked_groups(kernels_.device(), ceil_div(T, config_.query_tile), "AttentionPrefill"),
               config_.heads);
}

}  // namespace ember::kernels
